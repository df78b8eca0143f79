//! A whole `paraes bench` result: what measured (paraes version and commit, date, command), on
//! what (the machine), and the rows; rendered as JSON (and read back) or as CSV with the
//! document facts in leading `# key: value` lines. Schema: docs/BENCH.md.

use serde::{Deserialize, Serialize};

use crate::machine::Machine;
use crate::report::{self, Row};

/// The paraes that measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Paraes {
    /// The package version, e.g. `0.1.0`.
    pub version: String,
    /// The git commit built (12 hex digits, `-dirty` when the sources differed), or `unknown`.
    pub commit: String,
    /// When the run started, UTC, `YYYY-MM-DDTHH:MM:SSZ`.
    pub date: String,
    /// The command line of the run.
    pub command: String,
}

/// One `paraes bench` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Document {
    /// What measured.
    pub paraes: Paraes,
    /// What it ran on.
    pub machine: Machine,
    /// The measurements, in measurement order.
    pub rows: Vec<Row>,
}

/// `value` on one line: arrays as space-separated items, `null` and `[]` as `-`.
fn one_line(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Null => "-".into(),
        serde_json::Value::Array(items) if items.is_empty() => "-".into(),
        serde_json::Value::String(s) => s.replace(['\n', '\r'], " "),
        serde_json::Value::Array(items) => items.iter().map(one_line).collect::<Vec<_>>().join(" "),
        other => other.to_string(),
    }
}

impl Document {
    /// Pretty JSON: `{"paraes": {...}, "machine": {...}, "rows": [...]}`, with a final newline.
    pub fn json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("documents serialize");
        text.push('\n');
        text
    }

    /// Reads a document written by [`Document::json`]. The error is one line.
    pub fn from_json(text: &str) -> Result<Document, String> {
        serde_json::from_str(text).map_err(|e| {
            format!(
                "not a paraes bench JSON document ({e}): give a file written by \
                 `paraes bench --json` (an object with paraes, machine and rows)"
            )
        })
    }

    /// The document facts as `(key, value)` pairs, in the order of the CSV comment lines:
    /// `paraes_version`, `paraes_commit`, `date`, `command`, then the machine keys in
    /// alphabetical order.
    pub fn facts(&self) -> Vec<(String, String)> {
        let mut facts = vec![
            ("paraes_version".to_string(), self.paraes.version.clone()),
            ("paraes_commit".to_string(), self.paraes.commit.clone()),
            ("date".to_string(), self.paraes.date.clone()),
            (
                "command".to_string(),
                self.paraes.command.replace('\n', " "),
            ),
        ];
        let machine = serde_json::to_value(&self.machine).expect("machine serializes");
        if let serde_json::Value::Object(fields) = machine {
            for (key, value) in fields {
                facts.push((key, one_line(&value)));
            }
        }
        facts
    }

    /// CSV: one `# key: value` line per fact (see [`Document::facts`]), then the header line
    /// and the rows of [`report::csv`].
    pub fn csv(&self) -> String {
        let mut out = String::new();
        for (key, value) in self.facts() {
            out.push_str(&format!("# {key}: {value}\n"));
        }
        out.push_str(&report::csv(&self.rows));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mode::BenchMode;
    use crate::stats::Stats;
    use paraes_core::Mode;

    fn document() -> Document {
        let s = Stats {
            median: 1e-4,
            min: 0.9e-4,
            max: 1.2e-4,
        };
        let mut machine = Machine::detect();
        machine.load_after = machine.load_before;
        Document {
            paraes: Paraes {
                version: "0.1.0".into(),
                commit: "0123456789ab-dirty".into(),
                date: "2026-11-24T10:00:00Z".into(),
                command: "paraes bench --quick".into(),
            },
            machine,
            rows: vec![
                Row::new("cpu", "aesni", Mode::Ctr, 128, 1 << 20, 1, s),
                Row::new("openssl", "openssl-3.0.20", Mode::Ctr, 128, 1 << 20, 1, s),
            ],
        }
    }

    #[test]
    fn json_has_the_three_parts_and_every_row_key() {
        let doc = document();
        let text = doc.json();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value.as_object().unwrap().len(), 3);
        let at = |key: &str| text.find(&format!("\n  \"{key}\": ")).expect(key);
        assert!(at("paraes") < at("machine") && at("machine") < at("rows"));
        assert_eq!(value["paraes"]["commit"], "0123456789ab-dirty");
        assert!(value["machine"]["cpu_flags"].is_array());
        for row in value["rows"].as_array().unwrap() {
            let object = row.as_object().unwrap();
            assert_eq!(object.len(), report::COLUMNS.len());
            for column in report::COLUMNS {
                assert!(object.contains_key(column), "missing {column}");
            }
        }
        assert_eq!(value["rows"][1]["implementation"], "openssl-3.0.20");
        assert_eq!(Document::from_json(&doc.json()).unwrap(), doc);
        let err = Document::from_json("[]").unwrap_err();
        assert!(err.contains("paraes bench --json"), "{err}");
    }

    /// A document with gcm rows reads back as written, and its CSV says `gcm` per row.
    #[test]
    fn gcm_rows_round_trip() {
        let mut doc = document();
        let s = doc.rows[0].seconds;
        let stats = Stats {
            median: s,
            min: s,
            max: s,
        };
        doc.rows = vec![
            Row::new("cpu", "vaes512", BenchMode::Gcm, 256, 16 << 10, 1, stats),
            Row::new(
                "openssl",
                "openssl-3.0.20",
                BenchMode::Gcm,
                128,
                1 << 20,
                2,
                stats,
            ),
        ];
        let back = Document::from_json(&doc.json()).unwrap();
        assert_eq!(back, doc);
        assert_eq!(back.rows[0].bench_mode(), Some(BenchMode::Gcm));
        let value: serde_json::Value = serde_json::from_str(&doc.json()).unwrap();
        assert_eq!(value["rows"][1]["mode"], "gcm");
        let csv = doc.csv();
        assert!(csv.contains("\ncpu,vaes512,gcm,256,16384,1,"), "{csv}");
    }

    #[test]
    fn csv_starts_with_the_facts() {
        let doc = document();
        let text = doc.csv();
        let comments: Vec<&str> = text.lines().take_while(|l| l.starts_with("# ")).collect();
        assert_eq!(comments.len(), doc.facts().len());
        assert_eq!(comments[1], "# paraes_commit: 0123456789ab-dirty");
        assert!(comments.iter().any(|l| l.starts_with("# cpu: ")));
        assert!(comments.iter().any(|l| l.starts_with("# load_before: ")));
        let rest: Vec<&str> = text.lines().skip(comments.len()).collect();
        assert_eq!(rest[0], report::COLUMNS.join(","));
        assert_eq!(rest.len(), 3);
    }
}
