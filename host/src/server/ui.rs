//! The web page at `/ui`: a renderer for people, served from files embedded in the binary
//! (`host/ui/`), on the same origin as the A2A endpoints it speaks to. No build step, no
//! CDN: plain ES modules and one stylesheet.
//!
//! The page holds no data of its own, so its files need no authentication; everything it
//! shows it reads over A2A with the participant's own identity. Every file is sent with a
//! Content-Security-Policy that allows only this origin's scripts, styles and requests, and
//! no inline script or framing, so even a rendering mistake could not run injected code.

use axum::Router;
use axum::extract::Path;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

use super::AppState;

/// Where the page is served.
pub const UI_PATH: &str = "/ui";

/// What every file of the page may load: this origin only, no inline code, no framing.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
    style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; \
    form-action 'none'; frame-ancestors 'none'";

/// One embedded file.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static str,
}

const JS: &str = "text/javascript; charset=utf-8";

macro_rules! assets {
    ($($name:literal => $content_type:expr),* $(,)?) => {
        &[$(Asset {
            name: $name,
            content_type: $content_type,
            body: include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/ui/", $name)),
        }),*]
    };
}

/// The page's files, by name under `/ui/`.
const ASSETS: &[Asset] = assets! {
    "index.html" => "text/html; charset=utf-8",
    "style.css" => "text/css; charset=utf-8",
    "app.js" => JS,
    "a2a.js" => JS,
    "composer.js" => JS,
    "conversation.js" => JS,
    "dom.js" => JS,
    "errors.js" => JS,
    "follow.js" => JS,
    "identity.js" => JS,
    "inbox.js" => JS,
    "markdown.js" => JS,
    "parts.js" => JS,
    "sse.js" => JS,
    "trace.js" => JS,
    "words.js" => JS,
};

/// The page's routes.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route(UI_PATH, get(|| async { serve("index.html") }))
        .route("/ui/", get(|| async { Redirect::permanent(UI_PATH) }))
        .route(
            "/ui/{file}",
            get(|Path(file): Path<String>| async move { serve(&file) }),
        )
}

fn serve(name: &str) -> Response {
    let Some(asset) = ASSETS.iter().find(|asset| asset.name == name) else {
        return (StatusCode::NOT_FOUND, "no such file in the web page").into_response();
    };
    let headers = [
        (CONTENT_TYPE, HeaderValue::from_static(asset.content_type)),
        // The binary is the version: a restart with a new build must show the new page.
        (CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        (
            HeaderName::from_static("content-security-policy"),
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        ),
        (
            HeaderName::from_static("x-content-type-options"),
            HeaderValue::from_static("nosniff"),
        ),
        (
            HeaderName::from_static("referrer-policy"),
            HeaderValue::from_static("no-referrer"),
        ),
    ];
    (StatusCode::OK, headers, asset.body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_of_the_page_is_embedded() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("ui");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .expect("host/ui")
            .map(|entry| {
                entry
                    .expect("entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        on_disk.sort();
        let mut embedded: Vec<String> = ASSETS.iter().map(|a| a.name.to_owned()).collect();
        embedded.sort();
        assert_eq!(on_disk, embedded, "host/ui and ASSETS list the same files");
    }

    #[test]
    fn every_module_import_names_an_embedded_file() {
        for asset in ASSETS.iter().filter(|asset| asset.content_type == JS) {
            for line in asset
                .body
                .lines()
                .filter(|line| line.starts_with("import "))
            {
                let Some(from) = line.split(" from ").nth(1) else {
                    continue;
                };
                let target = from.trim_matches(|c| c == '\'' || c == '"' || c == ';');
                let name = target.strip_prefix("./").unwrap_or(target);
                assert!(
                    ASSETS.iter().any(|a| a.name == name),
                    "{} imports {target}, which is not embedded",
                    asset.name
                );
            }
        }
    }

    #[test]
    fn unknown_files_are_not_found() {
        assert_eq!(serve("secret.txt").status(), StatusCode::NOT_FOUND);
        assert_eq!(serve("../Cargo.toml").status(), StatusCode::NOT_FOUND);
        let page = serve("index.html");
        assert_eq!(page.status(), StatusCode::OK);
        assert!(page.headers().contains_key("content-security-policy"));
    }
}
