//! `kip_explain(command, parameters)`: the SQL a FIND compiles to, its bind
//! parameters, and Postgres's `EXPLAIN` of the plan `kip_execute` runs for
//! it (its saved generic plan, `exec::spi::explain`) — so users (and we) can
//! see what a KIP query costs and which indexes it uses.

use crate::engine::request::CommandRequest;
use crate::compile::find::compile_find;
use crate::engine;
use crate::exec::Mode;
use crate::compile::bound::opt_lit;
use crate::compile::env::Env;
use crate::resolve;
use crate::exec::{budget, spi, subxact, SqlParam};
use kip_lang::ast::Command;
use kip_lang::{ErrorCode, KipError};
use pgrx::prelude::*;

fn param_text(p: &SqlParam) -> String {
    match p {
        SqlParam::Text(s) | SqlParam::Fixed(s) => format!("{s:?}"),
        SqlParam::Int(i) => i.to_string(),
        SqlParam::Float(f) => f.to_string(),
        SqlParam::Numeric(n) => n.clone(),
        SqlParam::Bool(b) => b.to_string(),
        SqlParam::Json(v) => v.to_string(),
        SqlParam::TextArray(v) => format!("{v:?}"),
        SqlParam::IntArray(v) => format!("{v:?}"),
        SqlParam::RealArray(v) => format!("<{} floats>", v.len()),
        SqlParam::NullText => "NULL".into(),
    }
}

fn explain(command: &str, parameters: serde_json::Value, analyze: bool) -> Result<String, KipError> {
    let parameters = match parameters {
        serde_json::Value::Object(m) => m,
        serde_json::Value::Null => Default::default(),
        other => {
            return Err(KipError::new(ErrorCode::InvalidSyntax, format!("parameters must be a JSON object, got {other}"))
                .with_hint("Pass the placeholders' values as an object, e.g. '{\"name\": \"Aspirin\"}'."))
        }
    };
    let req = CommandRequest { command: command.to_string(), parameters };
    // Parsed as for a writer, so that any command but a FIND gets the
    // refusal below rather than kip_execute_readonly's; nothing but a FIND
    // is ever run.
    let script = engine::prepare(&req, Mode::ReadWrite)?;
    let Some(Command::Find(q)) = script.commands.first() else {
        let keyword = script.commands.first().map_or("this command", |c| c.keyword());
        return Err(KipError::new(ErrorCode::InvalidSyntax, format!("kip_explain explains FIND commands, not {keyword}"))
            .with_hint("Pass a FIND(…) WHERE { … } command."));
    };
    let space = crate::space::current()?;
    // The same refusal as kip_execute's: a plan's row counts (and, with
    // ANALYZE, its run) would tell about a space the caller may not read.
    crate::governance::access::require(&space, crate::governance::access::Privilege::Read)?;
    let facts = resolve::find_facts(&space, &q.where_clauses)?;
    let env = Env { space: space.name(), limits: resolve::limits(), facts: &facts };
    let limit = engine::limits::page_size(opt_lit(&q.limit)?);
    let plan = compile_find(q, env, limit, 0, None)?;
    // As `kip_execute` runs it: with the named concepts' ids when planned per call.
    let plan = engine::find::with_named_ids(&space, q, env, &plan, limit, 0, None)?.unwrap_or(plan);
    let mut out = String::from("-- SQL\n");
    out.push_str(&plan.sql);
    out.push_str("\n-- parameters\n");
    for (i, p) in plan.params.values().iter().enumerate() {
        out.push_str(&format!("${} = {}\n", i + 1, param_text(p)));
    }
    let (planning, params) = engine::find::planning(&plan, &space)?;
    // Which plan it is: the statement's generic plan, made once per
    // statement shape and backend (and per value of its fixed parameters),
    // or one made for this call's values.
    let fixed: Vec<String> =
        params.iter().enumerate().filter(|(_, p)| matches!(p, SqlParam::Fixed(_))).map(|(i, _)| format!("${}", i + 1)).collect();
    out.push_str(&match planning {
        spi::Planning::Custom | spi::Planning::CustomParallel => "-- planning: for this call's values\n".to_string(),
        _ if !fixed.is_empty() => format!("-- planning: generic, made for the values of {} (once per statement shape and values)\n", fixed.join(", ")),
        _ => "-- planning: generic (once per statement shape)\n".to_string(),
    });
    out.push_str("-- plan\n");
    out.push_str(&spi::explain(&plan.sql, &params, planning, analyze)?);
    Ok(out)
}

/// The generated SQL, its parameters and `EXPLAIN` output of a FIND command
/// (with `analyze => true`, `EXPLAIN ANALYZE`: the query runs).
#[pg_extern(volatile, parallel_unsafe)]
fn kip_explain(command: &str, parameters: default!(crate::api::jsonb_arg::JsonbArg, "'{}'"), analyze: default!(bool, false)) -> String {
    // The time budget of a command, as kip_execute gives it: with
    // `analyze` the query runs. Parameters are read as kip_execute reads
    // them (numbers, nesting).
    let _budget = budget::arm();
    let parameters = parameters.parse("the parameters");
    match parameters.and_then(|p| subxact::run_isolated(|| explain(command, p.clone(), analyze))) {
        Ok(text) => text,
        Err(e) => format!("{}: {}{}", e.code.as_str(), e.message, e.hint.map(|h| format!("\nhint: {h}")).unwrap_or_default()),
    }
}
