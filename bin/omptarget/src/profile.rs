//! `omptarget profile FILE`: a summary of a Chrome trace written by
//! `LIBOMPTARGET_PROFILE`: time per kind of event, the slowest kernels,
//! bytes moved per direction, and allocations.
use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

/// One complete event of the trace.
struct Event {
    cat: String,
    name: String,
    dur_us: f64,
    bytes: u64,
}

/// Print the summary of the trace at `path`.
pub fn summary(path: &Path) -> Result<()> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let json: Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a JSON trace", path.display()))?;
    print!("{}", table(&events(&json)?));
    Ok(())
}

/// The complete events of a trace (`{"traceEvents": [...]}` or a bare array).
fn events(json: &Value) -> Result<Vec<Event>> {
    let list = match json {
        Value::Array(list) => list,
        Value::Object(map) => match map.get("traceEvents") {
            Some(Value::Array(list)) => list,
            _ => bail!("the trace has no traceEvents array"),
        },
        _ => bail!("the trace is neither an object nor an array"),
    };
    let mut events = Vec::new();
    for (i, e) in list.iter().enumerate() {
        if e["ph"] != "X" {
            continue;
        }
        let (Some(cat), Some(name), Some(dur)) =
            (e["cat"].as_str(), e["name"].as_str(), e["dur"].as_f64())
        else {
            bail!("event {i} lacks cat, name or dur: {e}");
        };
        events.push(Event {
            cat: cat.to_owned(),
            name: name.to_owned(),
            dur_us: dur,
            bytes: e["args"]["bytes"].as_u64().unwrap_or(0),
        });
    }
    Ok(events)
}

#[derive(Default)]
struct Totals {
    count: usize,
    us: f64,
    max_us: f64,
    bytes: u64,
}

impl Totals {
    fn add(&mut self, e: &Event) {
        self.count += 1;
        self.us += e.dur_us;
        self.max_us = self.max_us.max(e.dur_us);
        self.bytes += e.bytes;
    }
}

/// The summary tables.
fn table(events: &[Event]) -> String {
    let mut out = String::new();
    let mut by_kind: BTreeMap<&str, Totals> = BTreeMap::new();
    for e in events {
        by_kind.entry(&e.cat).or_default().add(e);
    }
    let _ = writeln!(
        out,
        "time per kind of event (inclusive: an operation includes the plugin call beneath it)"
    );
    let _ = writeln!(
        out,
        "  {:<14} {:>8} {:>12} {:>12} {:>12}",
        "kind", "events", "total ms", "mean us", "max us"
    );
    for (kind, t) in &by_kind {
        let _ = writeln!(
            out,
            "  {kind:<14} {:>8} {:>12.3} {:>12.1} {:>12.1}",
            t.count,
            t.us / 1000.0,
            t.us / t.count as f64,
            t.max_us
        );
    }

    let mut kernels: BTreeMap<&str, Totals> = BTreeMap::new();
    for e in events
        .iter()
        .filter(|e| e.cat == "launch" && e.name != "target")
    {
        let name = e.name.strip_prefix("launch ").unwrap_or(&e.name);
        kernels.entry(name).or_default().add(e);
    }
    let mut kernels: Vec<(&str, Totals)> = kernels.into_iter().collect();
    kernels.sort_by(|a, b| b.1.us.total_cmp(&a.1.us));
    let _ = writeln!(out, "\nslowest kernels (by total time)");
    if kernels.is_empty() {
        let _ = writeln!(out, "  none launched");
    } else {
        let _ = writeln!(
            out,
            "  {:>8} {:>12} {:>12}  kernel",
            "launches", "total ms", "max us"
        );
        for (name, t) in kernels.iter().take(10) {
            let _ = writeln!(
                out,
                "  {:>8} {:>12.3} {:>12.1}  {name}",
                t.count,
                t.us / 1000.0,
                t.max_us
            );
        }
    }

    let _ = writeln!(out, "\nbytes moved per direction");
    let _ = writeln!(
        out,
        "  {:<16} {:>10} {:>14} {:>12} {:>10}",
        "direction", "transfers", "bytes", "total ms", "MB/s"
    );
    for (cat, label) in [
        ("transfer_h2d", "host to device"),
        ("transfer_d2h", "device to host"),
        ("transfer_d2d", "device to device"),
    ] {
        let t = by_kind
            .get(cat)
            .map_or((0, 0, 0.0), |t| (t.count, t.bytes, t.us));
        let rate = if t.2 > 0.0 { t.1 as f64 / t.2 } else { 0.0 };
        let _ = writeln!(
            out,
            "  {label:<16} {:>10} {:>14} {:>12.3} {:>10.1}",
            t.0,
            t.1,
            t.2 / 1000.0,
            rate
        );
    }

    let allocs = by_kind.get("alloc");
    let frees = by_kind.get("free");
    let _ = writeln!(out, "\nallocations");
    let _ = writeln!(
        out,
        "  {} allocations, {} bytes; {} frees, {} bytes; largest {} bytes",
        allocs.map_or(0, |t| t.count),
        allocs.map_or(0, |t| t.bytes),
        frees.map_or(0, |t| t.count),
        frees.map_or(0, |t| t.bytes),
        events
            .iter()
            .filter(|e| e.cat == "alloc")
            .map(|e| e.bytes)
            .max()
            .unwrap_or(0)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_table_sums_kinds_kernels_directions_and_allocations() {
        let trace = json!({"traceEvents": [
            {"ph": "X", "cat": "launch", "name": "target", "ts": 0, "dur": 100.0, "args": {}},
            {"ph": "X", "cat": "launch", "name": "launch k1", "ts": 1, "dur": 90.0, "args": {}},
            {"ph": "X", "cat": "launch", "name": "launch k2", "ts": 200, "dur": 500.0, "args": {}},
            {"ph": "X", "cat": "transfer_h2d", "name": "submit", "ts": 3, "dur": 2.0, "args": {"bytes": 4096}},
            {"ph": "X", "cat": "transfer_d2h", "name": "retrieve", "ts": 5, "dur": 2.0, "args": {"bytes": 100}},
            {"ph": "X", "cat": "alloc", "name": "alloc", "ts": 7, "dur": 1.0, "args": {"bytes": 64}},
            {"ph": "X", "cat": "free", "name": "free", "ts": 8, "dur": 1.0, "args": {"bytes": 64}},
            {"ph": "M", "name": "thread_name"}
        ]});
        let text = table(&events(&trace).unwrap());
        assert!(
            text.contains("  launch                3        0.690        230.0        500.0\n"),
            "{text}"
        );
        let k2 = text.find("  k2\n").unwrap();
        let k1 = text.find("  k1\n").unwrap();
        assert!(k2 < k1, "slowest first:\n{text}");
        assert!(
            text.contains("  host to device            1           4096        0.002     2048.0\n"),
            "{text}"
        );
        assert!(
            text.contains("  1 allocations, 64 bytes; 1 frees, 64 bytes; largest 64 bytes\n"),
            "{text}"
        );
        assert!(events(&json!({"x": 1})).is_err());
        assert!(events(&json!([{"ph": "X", "name": "n"}])).is_err());
    }
}
