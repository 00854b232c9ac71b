//! Limits on what the simulated API server accepts, enforced as a real
//! kube-apiserver enforces them: the request body size (3 MiB, 413
//! RequestEntityTooLarge), the integer query parameter `timeoutSeconds`
//! (decoded as the real server decodes it, then bounded), which requests
//! are served on a blocking thread (large and YAML bodies), and the values
//! `wink sim` accepts on its command line.
//!
//! Owns: these limits and their errors. Must not touch: routing (`http`),
//! the store, the nesting-depth pre-scan of bodies (`depth`).

use super::status::ApiError;
use axum::body::{Body, HttpBody};
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use std::num::IntErrorKind;
use std::time::Duration;

/// The largest request body read (the real server's `--max-request-body-bytes` default).
pub const MAX_BODY_BYTES: usize = 3 << 20;

/// How much of a refused body is still read (and dropped) so that the client,
/// which is usually still sending, gets the 413 instead of a reset connection.
const DRAIN_BYTES: usize = 64 << 20;

/// The longest watch a `timeoutSeconds` can ask for; larger values are clamped.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

/// Bounds of the BOOKMARK period (`--bookmark-interval`, `SimConfig::bookmark_interval`).
pub const MIN_BOOKMARK_INTERVAL: Duration = Duration::from_millis(10);
pub const MAX_BOOKMARK_INTERVAL: Duration = Duration::from_secs(24 * 60 * 60);

/// Bodies of at least this size, and YAML bodies of at least
/// [`OFF_THREAD_YAML_BYTES`], are parsed and served on a blocking thread.
const OFF_THREAD_BYTES: usize = 64 << 10;
const OFF_THREAD_YAML_BYTES: usize = 4 << 10;

/// The real server's 413: `Request entity too large: limit is 3145728`.
pub fn too_large() -> ApiError {
    ApiError::new(
        413,
        "RequestEntityTooLarge",
        format!("Request entity too large: limit is {MAX_BODY_BYTES}"),
    )
}

/// Read a request body of at most [`MAX_BODY_BYTES`]. A larger one (by its
/// `Content-Length` or by what arrives) is drained and refused with 413.
pub async fn read_body(body: Body) -> Result<Bytes, ApiError> {
    let declared = body.size_hint().lower();
    let mut data = body.into_data_stream();
    if declared > MAX_BODY_BYTES as u64 {
        drain(&mut data, 0).await;
        return Err(too_large());
    }
    let mut buf = BytesMut::with_capacity(declared as usize);
    while let Some(chunk) = data.next().await {
        let chunk = chunk.map_err(|e| ApiError::bad_request(e.to_string()))?;
        if buf.len() + chunk.len() > MAX_BODY_BYTES {
            drain(&mut data, buf.len() + chunk.len()).await;
            return Err(too_large());
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf.freeze())
}

async fn drain(data: &mut axum::body::BodyDataStream, mut read: usize) {
    while read < DRAIN_BYTES {
        match data.next().await {
            Some(Ok(chunk)) => read += chunk.len(),
            _ => return,
        }
    }
}

/// Whether a request with this body is served on a blocking thread, so that
/// parsing it does not hold up the async workers.
pub fn off_thread(content_type: &str, body_len: usize) -> bool {
    body_len >= OFF_THREAD_BYTES || (content_type.contains("yaml") && body_len >= OFF_THREAD_YAML_BYTES)
}

/// Run `serve` here, or on a blocking thread when `off_thread` (see [`off_thread`]).
pub async fn serve_body<T: Send + 'static>(
    off_thread: bool,
    serve: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    if !off_thread {
        return serve();
    }
    tokio::task::spawn_blocking(serve).await.unwrap_or_else(|e| {
        Err(ApiError::new(
            500,
            "InternalError",
            format!("Internal error occurred: {e}"),
        ))
    })
}

/// An integer query parameter decoded as the real server decodes it
/// (Go's `strconv.ParseInt(s, 10, 64)`), with its error wording.
pub fn parse_int64(s: &str) -> Result<i64, ApiError> {
    s.parse::<i64>().map_err(|e| {
        let why = match e.kind() {
            IntErrorKind::PosOverflow | IntErrorKind::NegOverflow => "value out of range",
            _ => "invalid syntax",
        };
        ApiError::bad_request(format!("strconv.ParseInt: parsing {s:?}: {why}"))
    })
}

/// `timeoutSeconds` of a list, watch or deletecollection: `None` when absent
/// or 0 (the server's default), 400 when not a non-negative 64-bit integer,
/// clamped to [`MAX_TIMEOUT`].
pub fn timeout_seconds(raw: Option<impl AsRef<str>>) -> Result<Option<Duration>, ApiError> {
    let Some(s) = raw else { return Ok(None) };
    let n = parse_int64(s.as_ref())?;
    if n < 0 {
        return Err(ApiError::bad_request(format!(
            "timeoutSeconds: Invalid value: {n}: must be greater than or equal to 0"
        )));
    }
    Ok((n > 0).then(|| Duration::from_secs(n as u64).min(MAX_TIMEOUT)))
}

/// `--bookmark-interval SECS`: finite, above 0, at most [`MAX_BOOKMARK_INTERVAL`].
pub fn bookmark_interval(secs: f64) -> Result<Duration, String> {
    let max = MAX_BOOKMARK_INTERVAL.as_secs();
    if !(secs.is_finite() && secs > 0.0 && secs <= max as f64) {
        return Err(format!(
            "the bookmark interval must be a number of seconds above 0 and at most {max}, not {secs}"
        ));
    }
    Ok(Duration::from_secs_f64(secs).max(MIN_BOOKMARK_INTERVAL))
}

/// `--churn RATE`: finite writes per second, 0 (no churn) or more.
pub fn churn_rate(rate: f64) -> Result<f64, String> {
    if !(rate.is_finite() && rate >= 0.0) {
        return Err(format!(
            "the churn rate must be a number of writes per second, 0 or more, not {rate}"
        ));
    }
    Ok(rate)
}

/// `--history N`: at least one event per resource type.
pub fn history(n: usize) -> Result<usize, String> {
    if n == 0 {
        return Err("the history must keep at least 1 event per resource type".into());
    }
    Ok(n)
}

fn number<T: std::str::FromStr>(s: &str, what: &str) -> Result<T, String> {
    s.trim().parse().map_err(|_| format!("`{s}` is not {what}"))
}

/// clap value parser of `--bookmark-interval`.
pub fn bookmark_interval_arg(s: &str) -> Result<f64, String> {
    let secs = number(s, "a number of seconds")?;
    bookmark_interval(secs).map(|_| secs)
}

/// clap value parser of `--churn`.
pub fn churn_arg(s: &str) -> Result<f64, String> {
    churn_rate(number(s, "a number of writes per second")?)
}

/// clap value parser of `--history`.
pub fn history_arg(s: &str) -> Result<usize, String> {
    history(number(s, "a whole number of events")?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeout_seconds_is_a_non_negative_int64_clamped() {
        assert_eq!(timeout_seconds(None::<&str>).unwrap(), None);
        assert_eq!(timeout_seconds(Some("0")).unwrap(), None);
        assert_eq!(timeout_seconds(Some("5")).unwrap(), Some(Duration::from_secs(5)));
        assert_eq!(timeout_seconds(Some("+7")).unwrap(), Some(Duration::from_secs(7)));
        assert_eq!(
            timeout_seconds(Some("9223372036854775807")).unwrap(),
            Some(MAX_TIMEOUT)
        );
        let e = timeout_seconds(Some("abc")).unwrap_err();
        assert_eq!((e.code, e.reason), (400, "BadRequest"));
        assert_eq!(e.message, "strconv.ParseInt: parsing \"abc\": invalid syntax");
        assert_eq!(
            timeout_seconds(Some("")).unwrap_err().message,
            "strconv.ParseInt: parsing \"\": invalid syntax"
        );
        assert_eq!(
            timeout_seconds(Some("9223372036854775808")).unwrap_err().message,
            "strconv.ParseInt: parsing \"9223372036854775808\": value out of range"
        );
        assert_eq!(
            timeout_seconds(Some("-5")).unwrap_err().message,
            "timeoutSeconds: Invalid value: -5: must be greater than or equal to 0"
        );
        assert_eq!(timeout_seconds(Some("1.5")).unwrap_err().code, 400);
    }

    #[test]
    fn cli_values_that_cannot_be_used_are_errors() {
        for bad in ["inf", "-inf", "NaN", "-1", "0", "1e400", "86401", "x"] {
            assert!(bookmark_interval_arg(bad).is_err(), "{bad}");
        }
        assert_eq!(bookmark_interval_arg("5").unwrap(), 5.0);
        assert_eq!(bookmark_interval(0.001).unwrap(), MIN_BOOKMARK_INTERVAL);
        for bad in ["inf", "NaN", "-1", "x"] {
            assert!(churn_arg(bad).is_err(), "{bad}");
        }
        assert_eq!(churn_arg("0").unwrap(), 0.0);
        assert!(history_arg("0").is_err() && history_arg("-1").is_err());
        assert_eq!(history_arg("10").unwrap(), 10);
    }

    #[tokio::test]
    async fn bodies_over_the_limit_are_refused() {
        let ok = vec![b' '; MAX_BODY_BYTES];
        assert_eq!(read_body(Body::from(ok)).await.unwrap().len(), MAX_BODY_BYTES);
        let big = vec![b' '; MAX_BODY_BYTES + 1];
        let e = read_body(Body::from(big)).await.unwrap_err();
        assert_eq!((e.code, e.reason), (413, "RequestEntityTooLarge"));
        assert_eq!(e.message, "Request entity too large: limit is 3145728");
        // Without a declared length: counted as it arrives.
        let chunks = (0..4).map(|_| Ok::<_, std::io::Error>(Bytes::from(vec![b' '; 1 << 20])));
        let e = read_body(Body::from_stream(futures::stream::iter(chunks)))
            .await
            .unwrap_err();
        assert_eq!(e.code, 413);
    }
}
