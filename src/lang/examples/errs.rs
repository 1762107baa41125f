fn main() {
    let cases = [
        "FIND ?x WHERE {{{",
        "FIND(?x) WHERE { ?x {type: \"Drug\"} ",
        "find(?x) WHERE { ?x {type: \"Drug\"} }",
        "FIND(?x) WHERE { ?x {type: 'Drug'} }",
        "FIND(?1x) WHERE { ?1x {type: \"Drug\"} }",
        "FIND(?x) WHERE { ?x {type: \"Drug\", color: \"red\"} }",
        "FIND(?x) WHERE { (?x, ?p{1,3}, ?y) }",
        "FIND(?x.foo) WHERE { ?x {type: \"Drug\"} }",
        "FIND(?x) WHERE { ?x {type: \"Drug\"} FILTER(?x.name == ) }",
        "FIND(?x) WHERE { ?x {type: \"Drug\"} } LIMIT -1",
        "FIND(?x) WHERE { ?x {type: \"Drug\"} } LIMIT \"a\"",
        "DELETE CONCEPT ?x WHERE { ?x {type: \"Drug\"} }",
        "UPSERT { CONCEPT ?x { {type: \"Drug\", name: \"A\"} SET ATTRIBUTES { a: 1, } SET ATTRIBUTES {b: 2} } }",
        "UPSERT { CONCEPT ?x { {type: \"Drug\"} } }",
        "UPSERT { CONCEPT ?x { {type: \"Drug\", name: \"A\"} SET ATTRIBUTES { 1a: 1 } } }",
        "SEARCH CONCEPT \"x\" MODE \"fast\"",
        "FIND(?x) WHERE { ?x {type: \"Drug\"} } FIND(?y) WHERE { ?y {type: \"Drug\"} }",
        "UPDATE ?x SET ATTRIBUTES { a: ADD(?y.attributes.a, 1) } WHERE { ?x {type: \"A\"} }",
        "FIND(?x) WHERE { ?x {type: \"Drug\"} FILTER(IN(?x.name, \"a\")) }",
        "FIND(?x) WHERE { ?x {type: \"Dr\\qug\"} }",
        "DESCRIBE CONCEPT TYPE",
        "",
        "UPSERT { CONCEPT ?x { {type: \"Drug\", name: \"A\"} SET ATTRIBUTES { a: 1 } EXPECT VERSION 2 } }",
    ];
    for c in cases {
        match kip_lang::parse(c) {
            Ok(s) => println!("OK   {c}\n     {:?}", s),
            Err(e) => println!("{c}\n  -> {e}"),
        }
    }
}
