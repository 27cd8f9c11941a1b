//! The provider adapters' own cost, measured side by side in one run
//! against the fake provider (`tiny_harness::model::fake`), which answers
//! at once on loopback:
//!
//! * one streamed answer of N tokens: the same bytes read raw with reqwest
//!   (the floor: HTTP and loopback), through the OpenAI adapter, and through
//!   the Anthropic adapter; the ratios are the adapters' SSE decoding and
//!   event building;
//! * the delay from the fake sending a token to the OpenAI adapter yielding
//!   it, p50 and p99, tokens 1 ms apart.
//!
//! The same fake is the building block for the harness's own benchmarks: a
//! model served by `FakeProvider::openai_model` in `Models::build`, answers
//! from `Answer::tokens(n).openai()` or `Answer::openai_stamped` (whose
//! deltas carry when they were sent, `fake::sent_at`).
//!
//! Run: `cargo bench --bench providers` (optionally `-- --iterations N`).

#[path = "common/stats.rs"]
mod stats;
use stats::{iterations_from_args, median, percentile, ratio};

use std::time::{Duration, Instant};

use tiny_harness::model::fake::{Answer, FakeProvider, Recorded, sent_at};
use tiny_harness::model::{Effort, ModelEvent, ModelRequest, Models, ToolSpec};
use tokio_stream::StreamExt as _;

const TOKEN_COUNTS: [usize; 3] = [10, 100, 1000];
const DELAY_TOKENS: usize = 500;

fn main() -> anyhow::Result<()> {
    let iterations = iterations_from_args().unwrap_or(200).max(1);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(run(iterations))
}

async fn run(iterations: usize) -> anyhow::Result<()> {
    let tokens =
        |request: &Recorded| -> usize { request.last_user_text().trim().parse().unwrap_or(1) };
    let openai = FakeProvider::start(move |request| Answer::tokens(tokens(request)).openai()).await;
    let anthropic =
        FakeProvider::start(move |request| Answer::tokens(tokens(request)).anthropic()).await;
    let models = Models::build(
        &[
            openai.openai_model("gpt"),
            anthropic.anthropic_model("claude"),
        ],
        "gpt",
    )?;
    let http = tiny_harness::outbound::client_builder(&Default::default()).build()?;

    println!("One streamed answer, median of {iterations} (ratio to reading the bytes raw):");
    let openai_url = openai.url();
    for count in TOKEN_COUNTS {
        let raw = median(iterations, 1, || read_raw(&http, &openai_url, count)).await;
        let via_openai = median(iterations, 1, || stream(&models, "gpt", count)).await;
        let via_anthropic = median(iterations, 1, || stream(&models, "claude", count)).await;
        println!(
            "  {count:>5} tokens: raw {:>9.1?}, openai {:>9.1?} ({:.2}x), anthropic {:>9.1?} ({:.2}x)",
            raw,
            via_openai,
            ratio(via_openai, raw),
            via_anthropic,
            ratio(via_anthropic, raw),
        );
    }

    let stamped =
        FakeProvider::start(|_| Answer::openai_stamped(DELAY_TOKENS, Duration::from_millis(1)))
            .await;
    let models = Models::build(&[stamped.openai_model("gpt")], "gpt")?;
    let mut delays = token_delays(&models, &stamped).await;
    delays.sort();
    println!(
        "Token sent by the provider -> event from the OpenAI adapter, {} tokens 1 ms apart: p50 {:.1?}, p99 {:.1?}",
        delays.len(),
        percentile(&delays, 50),
        percentile(&delays, 99),
    );
    Ok(())
}

fn request(count: usize) -> ModelRequest {
    ModelRequest {
        model: "bench".into(),
        effort: Effort::Medium,
        system: Some("You are a benchmark.".into()),
        messages: vec![tiny_harness::model::ChatMessage::User {
            content: count.to_string(),
        }],
        tools: vec![ToolSpec {
            name: "noop".into(),
            description: "Does nothing".into(),
            input_schema: serde_json::json!({"type": "object"}),
        }],
        max_output_tokens: None,
    }
}

/// The time to stream an answer of `count` tokens through model `name`.
async fn stream(models: &Models, name: &str, count: usize) -> Duration {
    let model = &models.get(name).expect("configured").model;
    let started = Instant::now();
    let mut events = model.stream(request(count));
    let mut deltas = 0;
    while let Some(event) = events.next().await {
        if let ModelEvent::TextDelta(_) = event.expect("the fake answers") {
            deltas += 1;
        }
    }
    let elapsed = started.elapsed();
    assert_eq!(deltas, count);
    elapsed
}

/// The time to post the same request and read the answer's bytes, raw.
async fn read_raw(http: &reqwest::Client, base: &str, count: usize) -> Duration {
    let body = serde_json::json!({
        "model": "raw", "stream": true,
        "messages": [{"role": "user", "content": count.to_string()}],
    });
    let started = Instant::now();
    let mut response = http
        .post(format!("{base}/v1/chat/completions"))
        .json(&body)
        .send()
        .await
        .expect("the fake answers");
    let mut bytes = 0;
    while let Some(chunk) = response.chunk().await.expect("the body reads") {
        bytes += chunk.len();
    }
    let elapsed = started.elapsed();
    assert!(bytes > count * 10);
    elapsed
}

/// The delay of every token of one stamped answer.
async fn token_delays(models: &Models, fake: &FakeProvider) -> Vec<Duration> {
    let model = &models.get("gpt").expect("configured").model;
    let mut events = model.stream(request(DELAY_TOKENS));
    let mut delays = Vec::with_capacity(DELAY_TOKENS);
    while let Some(event) = events.next().await {
        if let ModelEvent::TextDelta(text) = event.expect("the fake answers") {
            let received = fake.epoch().elapsed();
            let sent = sent_at(&text).expect("a stamped token");
            delays.push(received.saturating_sub(sent));
        }
    }
    delays
}
