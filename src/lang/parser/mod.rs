//! pest parse + AST builder.
//!
//! Layout: this file runs pest and dispatches commands; `lexemes.rs` builds
//! identifiers, strings, numbers, JSON values and dot paths; `kql.rs`,
//! `kml.rs` and `meta.rs` build the commands of each sub-language.
//!
//! The grammar (grammar.pest) accepts a slightly wider language than KIP;
//! this module builds the typed AST and performs the structural checks that
//! give better messages than a grammar failure would (identifier format,
//! concept-selector keys, arities, UPSERT target forms, …). Every error is a
//! `KIP_1001` (or `KIP_1002` for identifiers) carrying line and column.

mod kml;
mod kql;
mod lexemes;
mod meta;

use crate::ast::*;
use crate::error::{ErrorCode, KipError};
use kml::*;
use kql::*;
use lexemes::*;
use meta::*;
use pest::iterators::Pair;
use pest::Parser as _;

#[derive(pest_derive::Parser)]
#[grammar = "grammar.pest"] // relative to the crate root (src/lang)
pub(crate) struct KipParser;

type Result<T> = std::result::Result<T, KipError>;

pub fn parse_script(text: &str) -> Result<Script> {
    let mut pairs = match KipParser::parse(Rule::script, text) {
        Ok(p) => p,
        Err(e) => return Err(syntax_failure(e, text)),
    };
    let script = pairs.next().expect("script rule");
    let mut commands = Vec::new();
    // (byte offset, keyword) of the first read command; the line/column is
    // only computed for the error (pest's line_col scans the whole input).
    let mut first_read: Option<(usize, &'static str)> = None;
    for pair in script.into_inner() {
        if pair.as_rule() == Rule::EOI {
            continue;
        }
        let offset = pair.as_span().start();
        let command = build_command(pair)?;
        if !command.is_kml() && first_read.is_none() {
            first_read = Some((offset, command.keyword()));
        }
        commands.push(command);
    }
    // One text = one KQL/META command, or a sequence of KML statements: a
    // FIND mixed into a capsule would have no place in the response shape.
    if commands.len() > 1 {
        if let Some((offset, kw)) = first_read {
            let (line, col) = crate::depth::line_col(text, offset);
            return Err(KipError::syntax(format!(
                "line {line}, column {col}: {kw} must be the only command in its text; only UPSERT statements may be combined in one text"
            ))
            .with_hint("Send several commands through the `commands` array instead."));
        }
    }
    Ok(Script { commands })
}

/// Translate a pest failure; re-parse once with pest's error detail on so
/// the message can also list expected punctuation.
fn syntax_failure(err: pest::error::Error<Rule>, text: &str) -> KipError {
    pest::set_error_detail(true);
    let detail = KipParser::parse(Rule::script, text).err();
    pest::set_error_detail(false);
    crate::syntax_error::translate(err, detail, text)
}

// ---------------------------------------------------------------- command --

fn build_command(pair: Pair<Rule>) -> Result<Command> {
    Ok(match pair.as_rule() {
        Rule::find => Command::Find(find(pair)?),
        Rule::upsert => Command::Upsert(upsert(pair)?),
        Rule::update => Command::Update(update(pair)?),
        Rule::merge => Command::Merge(merge(pair)?),
        Rule::delete => Command::Delete(delete(pair)?),
        Rule::describe => Command::Describe(describe(pair)?),
        Rule::search => Command::Search(search(pair)?),
        Rule::export => Command::Export(export(pair)?),
        r => unreachable!("unexpected command rule {r:?}"),
    })
}

/// Store `value` into `slot`, refusing a second occurrence of a clause.
pub(super) fn once<T>(slot: &mut Option<T>, value: T, pair: &Pair<Rule>, what: &str) -> Result<()> {
    if slot.is_some() {
        return Err(syn(pair, format!("{what} given more than once"))
        .with_hint(format!("Write {what} only once.")));
    }
    *slot = Some(value);
    Ok(())
}
