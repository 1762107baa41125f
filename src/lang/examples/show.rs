fn main() {
    let path = std::env::args().nth(1).unwrap();
    let text = std::fs::read_to_string(path).unwrap();
    let ast = kip_lang::parse(&text).unwrap();
    println!("{}", kip_lang::print(&ast));
}
