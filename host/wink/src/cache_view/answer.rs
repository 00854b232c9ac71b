//! A List answer streamed as it is written: its items are serialised
//! [`CHUNK`] bytes at a time, only when the connection has taken what came
//! before, so an answer holds at most [`PER_ANSWER`] bytes however slowly
//! its client reads, and all answers together hold at most their surface's
//! [`Budget`]. Each chunk carries its share of both until the connection
//! has written it (the bytes' owner holds the permits), so what the HTTP
//! server queues is counted too.
//!
//! Owns the bytes of answers in flight; knows nothing of the store or HTTP
//! routes.

use axum::body::Body;
use bytes::Bytes;
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Bytes serialised at a time.
pub const CHUNK: usize = 64 * 1024;
/// Bytes one answer holds at most (serialised, not yet written).
pub const PER_ANSWER: usize = 256 * 1024;
/// Bytes all of a surface's answers hold at most together.
pub const BUDGET: usize = 64 * 1024 * 1024;

/// The bytes of answers in flight that a surface allows, shared by its
/// answers.
#[derive(Clone)]
pub struct Budget {
    bytes: Arc<Semaphore>,
    capacity: usize,
}

impl Budget {
    pub fn new(capacity: usize) -> Self {
        Budget {
            bytes: Arc::new(Semaphore::new(capacity)),
            capacity,
        }
    }
}

impl Default for Budget {
    fn default() -> Self {
        Budget::new(BUDGET)
    }
}

/// Permits held for bytes in flight: the answer's own and the budget's.
struct Held(Vec<OwnedSemaphorePermit>);

/// `n` bytes (at most what `semaphore` of `capacity` can ever give while
/// `CHUNK` of it is held) from `semaphore`.
async fn take(semaphore: &Arc<Semaphore>, capacity: usize, n: usize) -> OwnedSemaphorePermit {
    let n = n.min(capacity.saturating_sub(CHUNK).max(1)) as u32;
    semaphore
        .clone()
        .acquire_many_owned(n)
        .await
        .expect("the semaphore is never closed")
}

/// Serialised bytes and the permits they hold until they are dropped.
struct Chunk {
    bytes: Vec<u8>,
    _held: Held,
}

impl AsRef<[u8]> for Chunk {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

struct State<T, F> {
    head: Option<String>,
    items: std::vec::IntoIter<T>,
    json: F,
    own: Arc<Semaphore>,
    budget: Budget,
    first: Option<Held>,
    any: bool,
    done: bool,
}

impl<T, F: Fn(&T) -> Cow<'_, str>> State<T, F> {
    /// The next chunk once its bytes are available; none after the last.
    async fn next(&mut self) -> Option<Bytes> {
        if self.done {
            return None;
        }
        let mut held = match self.first.take() {
            Some(held) => held,
            None => Held(vec![
                take(&self.own, PER_ANSWER, CHUNK).await,
                take(&self.budget.bytes, self.budget.capacity, CHUNK).await,
            ]),
        };
        let mut bytes = Vec::with_capacity(CHUNK);
        if let Some(head) = self.head.take() {
            bytes.extend_from_slice(head.as_bytes());
        }
        while bytes.len() < CHUNK {
            match self.items.next() {
                Some(item) => {
                    if self.any {
                        bytes.push(b',');
                    }
                    self.any = true;
                    bytes.extend_from_slice((self.json)(&item).as_bytes());
                }
                None => {
                    bytes.extend_from_slice(b"]}");
                    self.done = true;
                    break;
                }
            }
        }
        // An item larger than a chunk: its excess is counted too.
        let excess = bytes.len().saturating_sub(CHUNK);
        if excess > 0 {
            held.0.push(take(&self.own, PER_ANSWER, excess).await);
            held.0
                .push(take(&self.budget.bytes, self.budget.capacity, excess).await);
        }
        Some(Bytes::from_owner(Chunk { bytes, _held: held }))
    }
}

/// The List answer `head` (up to the items' opening bracket), `items`
/// serialised by `json`, and `]}`; none when `budget` cannot spare its
/// first chunk within `wait` (the caller answers 503).
pub async fn stream<T, F>(
    head: String,
    items: Vec<T>,
    json: F,
    budget: &Budget,
    wait: Duration,
) -> Option<Body>
where
    T: Send + 'static,
    F: Fn(&T) -> Cow<'_, str> + Send + 'static,
{
    let own = Arc::new(Semaphore::new(PER_ANSWER));
    let mine = take(&own, PER_ANSWER, CHUNK).await;
    let shared = tokio::time::timeout(wait, take(&budget.bytes, budget.capacity, CHUNK))
        .await
        .ok()?;
    let state = State {
        head: Some(head),
        items: items.into_iter(),
        json,
        own,
        budget: budget.clone(),
        first: Some(Held(vec![mine, shared])),
        any: false,
        done: false,
    };
    let chunks = futures::stream::unfold(state, |mut state| async move {
        let chunk = state.next().await?;
        Some((Ok::<_, std::convert::Infallible>(chunk), state))
    });
    Some(Body::from_stream(chunks))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn items(sizes: &[usize]) -> Vec<String> {
        sizes
            .iter()
            .enumerate()
            .map(|(i, n)| serde_json::json!({"i": i, "pad": "x".repeat(*n)}).to_string())
            .collect()
    }

    #[allow(clippy::ptr_arg)] // the items are Strings
    fn borrowed(s: &String) -> Cow<'_, str> {
        Cow::Borrowed(s)
    }

    async fn answer(items: Vec<String>, budget: &Budget) -> Option<Body> {
        let head = r#"{"items":["#.to_string();
        stream(head, items, borrowed, budget, Duration::from_millis(100)).await
    }

    #[tokio::test]
    async fn the_whole_answer_is_the_list() {
        for sizes in [vec![], vec![10], vec![100; 5000], vec![10, 3 * CHUNK, 10]] {
            let want = items(&sizes);
            let mut body = answer(want.clone(), &Budget::default()).await.unwrap();
            // Written as a connection writes: each chunk let go once copied.
            let mut bytes = Vec::new();
            while let Some(frame) = body.frame().await {
                bytes.extend_from_slice(&frame.unwrap().into_data().unwrap());
            }
            let list: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            let got: Vec<String> = list["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.to_string())
                .collect();
            assert_eq!(got, want);
        }
    }

    /// Frames taken from `body` and kept (as a connection queues them),
    /// until the next one does not come.
    async fn held(body: &mut Body) -> Vec<Bytes> {
        let mut kept = Vec::new();
        while let Ok(Some(frame)) = tokio::time::timeout(Duration::from_millis(100), body.frame()).await {
            kept.push(frame.unwrap().into_data().unwrap());
        }
        kept
    }

    #[tokio::test]
    async fn an_answer_not_written_holds_at_most_its_share() {
        let mut body = answer(items(&[1000; 3000]), &Budget::default()).await.unwrap();
        let kept = held(&mut body).await;
        let bytes: usize = kept.iter().map(Bytes::len).sum();
        assert!((CHUNK..=PER_ANSWER + 2000).contains(&bytes), "{bytes} bytes held");
        // Once written (dropped), the next ones come.
        drop(kept);
        assert!(!held(&mut body).await.is_empty());
    }

    #[tokio::test]
    async fn answers_past_the_budget_wait_and_the_first_past_it_is_refused() {
        let budget = Budget::new(6 * CHUNK);
        let mut first = answer(items(&[1000; 3000]), &budget).await.unwrap();
        let kept = held(&mut first).await;
        let mut second = answer(items(&[1000; 3000]), &budget).await.unwrap();
        let more = held(&mut second).await;
        let bytes: usize = kept.iter().chain(&more).map(Bytes::len).sum();
        assert!(more.len() < kept.len(), "the second waits for the budget");
        assert!(
            bytes <= 6 * CHUNK + 4000,
            "{bytes} bytes held within a budget of {}",
            6 * CHUNK
        );
        assert!(answer(items(&[10]), &budget).await.is_none(), "over the budget");
        drop((kept, more, first, second));
        assert!(
            answer(items(&[10]), &budget).await.is_some(),
            "the budget is back"
        );
    }
}
