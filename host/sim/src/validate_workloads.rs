//! Value checks of the workload kinds, as the API server's validation
//! makes them: a Deployment's, ReplicaSet's, StatefulSet's and
//! ReplicationController's `spec.replicas` is not negative, and a
//! CronJob's `spec.schedule` is a standard cron schedule (the parser the
//! CronJob controller uses, robfig/cron's `ParseStandard`: five fields or
//! an `@` descriptor, no `TZ=` prefix), with its error wording.
//!
//! Owns: these checks. Must not touch: the store, HTTP, when a write is
//! checked (`write`, through `validate::values`).

use serde_json::Value;

/// `spec.replicas` is not negative.
pub fn replicas(body: &Value) -> Vec<String> {
    match body.pointer("/spec/replicas").and_then(Value::as_i64) {
        Some(n) if n < 0 => vec![format!(
            "spec.replicas: Invalid value: {n}: must be greater than or equal to 0"
        )],
        _ => Vec::new(),
    }
}

/// `spec.schedule` is required and parses; no time zone in it.
pub fn cronjob(body: &Value) -> Vec<String> {
    let schedule = body
        .pointer("/spec/schedule")
        .and_then(Value::as_str)
        .unwrap_or("");
    if schedule.is_empty() {
        return vec!["spec.schedule: Required value".to_string()];
    }
    let mut errs = Vec::new();
    if let Err(why) = parse_standard(schedule) {
        errs.push(format!("spec.schedule: Invalid value: {schedule:?}: {why}"));
    }
    if schedule.contains("TZ") {
        errs.push(format!(
            "spec.schedule: Invalid value: {schedule:?}: cannot use TZ or CRON_TZ in schedule, \
             use timeZone field instead"
        ));
    }
    errs
}

const DESCRIPTORS: [&str; 7] = [
    "@yearly",
    "@annually",
    "@monthly",
    "@weekly",
    "@daily",
    "@midnight",
    "@hourly",
];
const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// robfig/cron's `ParseStandard`, its errors worded as its own.
fn parse_standard(spec: &str) -> Result<(), String> {
    let mut spec = spec;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        spec = spec.split_once(' ').map_or("", |(_, rest)| rest.trim());
    }
    if let Some(rest) = spec.strip_prefix("@every ") {
        return duration(rest.trim())
            .map_err(|_| format!("failed to parse duration {spec}: time: invalid duration \"{rest}\""));
    }
    if spec.starts_with('@') {
        return match DESCRIPTORS.contains(&spec) {
            true => Ok(()),
            false => Err(format!("unrecognized descriptor: {spec}")),
        };
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    let bounds: [(u32, u32, &[&str]); 5] = [
        (0, 59, &[]),
        (0, 23, &[]),
        (1, 31, &[]),
        (1, 12, &MONTHS),
        (0, 6, &DAYS),
    ];
    for (field, (min, max, names)) in fields.iter().zip(bounds) {
        for expr in field.split(',').filter(|e| !e.is_empty()) {
            range(expr, min, max, names)?;
        }
    }
    Ok(())
}

/// Go's `time.ParseDuration`, enough to accept `@every 1h30m` and refuse
/// what is not a sequence of number-unit pairs.
fn duration(s: &str) -> Result<(), ()> {
    let units = ["ns", "us", "µs", "ms", "s", "m", "h"];
    let mut rest = s.strip_prefix(['+', '-']).unwrap_or(s);
    if rest == "0" {
        return Ok(());
    }
    if rest.is_empty() {
        return Err(());
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit() && c != '.').ok_or(())?;
        if digits == 0 {
            return Err(());
        }
        rest = &rest[digits..];
        let unit = units
            .iter()
            .filter(|u| rest.starts_with(*u))
            .max_by_key(|u| u.len())
            .ok_or(())?;
        rest = &rest[unit.len()..];
    }
    Ok(())
}

/// robfig/cron's `getRange`: `*`, `?`, `n`, `a-b`, each with `/step`.
fn range(expr: &str, min: u32, max: u32, names: &[&str]) -> Result<(), String> {
    let steps: Vec<&str> = expr.split('/').collect();
    let bounds: Vec<&str> = steps[0].split('-').collect();
    let (start, mut end) = if bounds[0] == "*" || bounds[0] == "?" {
        (min, max)
    } else {
        let start = int_or_name(bounds[0], names)?;
        match bounds.len() {
            1 => (start, start),
            2 => (start, int_or_name(bounds[1], names)?),
            _ => return Err(format!("too many hyphens: {expr}")),
        }
    };
    let step = match steps.len() {
        1 => 1,
        2 => {
            if bounds.len() == 1 {
                end = max;
            }
            int(steps[1])?
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({min}): {expr}"
        ));
    }
    if end > max {
        return Err(format!("end of range ({end}) above maximum ({max}): {expr}"));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(())
}

fn int_or_name(expr: &str, names: &[&str]) -> Result<u32, String> {
    let lower = expr.to_ascii_lowercase();
    match names.iter().position(|n| *n == lower) {
        // Months count from 1, days from 0.
        Some(i) if names.len() == 12 => Ok(i as u32 + 1),
        Some(i) => Ok(i as u32),
        None => int(expr),
    }
}

/// robfig/cron's `mustParseInt` (with `strconv.Atoi`'s error).
fn int(expr: &str) -> Result<u32, String> {
    let digits = expr.strip_prefix(['+', '-']).unwrap_or(expr);
    let n: i64 = match !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        true => expr.parse().map_err(|_| {
            format!("failed to parse int from {expr}: strconv.Atoi: parsing {expr:?}: value out of range")
        })?,
        false => {
            return Err(format!(
                "failed to parse int from {expr}: strconv.Atoi: parsing {expr:?}: invalid syntax"
            ));
        }
    };
    if n < 0 {
        return Err(format!("negative number ({n}) not allowed: {expr}"));
    }
    u32::try_from(n).map_err(|_| format!("end of range ({n}) above maximum: {expr}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schedule(s: &str) -> Vec<String> {
        cronjob(&json!({"spec": {"schedule": s}}))
    }

    #[test]
    fn negative_replicas_are_invalid() {
        assert_eq!(
            replicas(&json!({"spec": {"replicas": -1}})),
            ["spec.replicas: Invalid value: -1: must be greater than or equal to 0"]
        );
        assert!(replicas(&json!({"spec": {"replicas": 0}})).is_empty());
        assert!(replicas(&json!({"spec": {}})).is_empty());
    }

    #[test]
    fn schedules_parse_as_the_cronjob_controller_parses_them() {
        for ok in [
            "*/5 * * * *",
            "0 0 1 jan-dec/2 MON-fri",
            "? 1,2,,3 * * 0",
            "@daily",
            "@every 1h30m",
        ] {
            assert!(schedule(ok).is_empty(), "{ok}: {:?}", schedule(ok));
        }
        assert_eq!(
            schedule("never"),
            ["spec.schedule: Invalid value: \"never\": expected exactly 5 fields, found 1: [never]"]
        );
        assert_eq!(cronjob(&json!({"spec": {}})), ["spec.schedule: Required value"]);
        let cases = [
            ("60 * * * *", "end of range (60) above maximum (59): 60"),
            ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
            (
                "5-1 * * * *",
                "beginning of range (5) beyond end of range (1): 5-1",
            ),
            ("*/0 * * * *", "step of range should be a positive number: */0"),
            ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
            (
                "x * * * *",
                "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax",
            ),
            ("@sometimes", "unrecognized descriptor: @sometimes"),
        ];
        for (s, why) in cases {
            assert_eq!(
                schedule(s),
                [format!("spec.schedule: Invalid value: {s:?}: {why}")]
            );
        }
        assert_eq!(schedule("TZ=UTC 0 * * * *").len(), 1, "a time zone is refused");
    }
}
