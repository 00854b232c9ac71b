use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

async fn pair(window: Duration) -> (Windowed, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (client, accepted) = tokio::join!(TcpStream::connect(addr), listener.accept());
    let (server, _) = accepted.unwrap();
    server.set_nodelay(true).unwrap();
    (Windowed::new(client.unwrap(), window), server)
}

/// What one read returned, and whether the connection read in windows after it.
#[derive(Debug)]
struct Read {
    bytes: Vec<u8>,
    windowed: bool,
}

async fn read_all(mut conn: Windowed) -> Vec<Read> {
    let mut reads = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        let n = conn.read(&mut buf).await.unwrap();
        if n == 0 {
            return reads;
        }
        reads.push(Read {
            bytes: buf[..n].to_vec(),
            windowed: conn.is_windowed(),
        });
    }
}

#[tokio::test]
async fn a_trickle_is_read_once_per_window_and_a_quiet_window_ends_it() {
    let (conn, mut server) = pair(Duration::from_millis(150)).await;
    let reader = tokio::spawn(read_all(conn));
    // Ten arrivals 10 ms apart: the first ENGAGE are read one by one, the
    // rest wait for the window and come in fewer reads.
    for _ in 0..10 {
        server.write_all(b"a").await.unwrap();
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Quiet for longer than a window, then one arrival: read on its own,
    // the connection back to reading each arrival.
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.write_all(b"z").await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    drop(server);
    let reads = reader.await.unwrap();

    let all: Vec<u8> = reads.iter().flat_map(|r| r.bytes.clone()).collect();
    assert_eq!(all, b"aaaaaaaaaaz", "nothing lost, nothing reordered: {reads:?}");
    let batched = reads.iter().filter(|r| r.bytes.len() > 1).count();
    assert!(batched >= 1, "some arrivals were read together: {reads:?}");
    assert!(
        reads.len() <= ENGAGE as usize + 3,
        "after engaging, one read per window, not per arrival: {reads:?}"
    );
    let last = reads.last().unwrap();
    assert_eq!(last.bytes, b"z");
    assert!(!last.windowed, "a quiet window ends the windows: {reads:?}");
}

#[tokio::test]
async fn arrivals_further_apart_than_a_window_are_read_as_they_come() {
    let (conn, mut server) = pair(Duration::from_millis(5)).await;
    let reader = tokio::spawn(read_all(conn));
    for _ in 0..6 {
        server.write_all(b"a").await.unwrap();
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    drop(server);
    let reads = reader.await.unwrap();
    assert_eq!(reads.len(), 6, "{reads:?}");
    assert!(reads.iter().all(|r| !r.windowed), "{reads:?}");
}

#[tokio::test]
async fn a_write_ends_the_windows_and_a_bulk_transfer_is_read_whole() {
    let (mut conn, mut server) = pair(Duration::from_millis(150)).await;
    let mut buf = vec![0u8; 256 * 1024];
    // Engage: ENGAGE drains close together.
    let writer = tokio::spawn(async move {
        for _ in 0..ENGAGE + 2 {
            server.write_all(b"a").await.unwrap();
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        server
    });
    let mut got = 0;
    while got < ENGAGE as usize + 2 {
        got += conn.read(&mut buf).await.unwrap();
    }
    let mut server = writer.await.unwrap();
    assert!(conn.is_windowed());

    // Above the low-water mark, readable at once: the whole transfer
    // arrives well before the window would let a smaller one through.
    let bulk = vec![7u8; LOW_WATER * 4];
    server.write_all(&bulk).await.unwrap();
    let mut read = 0;
    while read < bulk.len() {
        read += conn.read(&mut buf).await.unwrap();
    }
    assert_eq!(read, bulk.len());

    conn.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    assert!(
        !conn.is_windowed(),
        "a request puts the connection back to direct reads"
    );
}

#[tokio::test]
async fn a_close_while_windowed_is_read_after_everything_before_it() {
    // A window far longer than the test: only the close can end the read.
    let (conn, mut server) = pair(Duration::from_secs(30)).await;
    let reader = tokio::spawn(read_all(conn));
    for _ in 0..ENGAGE + 3 {
        server.write_all(b"a").await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    server.write_all(b"tail").await.unwrap();
    drop(server);
    let reads = tokio::time::timeout(Duration::from_secs(10), reader)
        .await
        .expect("the close is seen without waiting for the window")
        .unwrap();
    let all: Vec<u8> = reads.iter().flat_map(|r| r.bytes.clone()).collect();
    assert_eq!(all, [&[b'a'; ENGAGE as usize + 3][..], b"tail"].concat());
    assert!(reads.last().unwrap().windowed, "{reads:?}");
}
