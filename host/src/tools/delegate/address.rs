//! Where a delegate may be: like a webhook (A2A 13.2), a remote agent's URL
//! (its card's, and the endpoint the card names) must resolve to public
//! addresses only, unless the operator allows private ones for that agent
//! (`[agents.<name>] allow_private`). The rules are the webhooks' own
//! (`push::address::judge`); the host is checked before each request (an
//! IP literal never reaches a resolver) and again as it is resolved
//! ([`AgentResolver`], so a name cannot resolve elsewhere later).

use std::net::{IpAddr, SocketAddr};

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::push::address::judge;

/// Check `url` for agent `agent`: http or https, no credentials, and
/// public addresses only unless `allow_private`.
pub(crate) async fn check(agent: &str, url: &Url, allow_private: bool) -> Result<(), String> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("`{url}` is not an http:// or https:// URL"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!("`{url}` carries credentials; use token_env"));
    }
    let host = url
        .host_str()
        .ok_or_else(|| format!("`{url}` has no host"))?;
    let port = url.port_or_known_default().unwrap_or(80);
    let addresses = resolve(host, port).await?;
    if allow_private {
        return Ok(());
    }
    refuse_private(agent, host, &addresses).map_err(|error| error.to_string())
}

async fn resolve(host: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
    let literal = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = literal.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let addresses: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|error| format!("cannot resolve `{host}`: {error}"))?
        .collect();
    if addresses.is_empty() {
        return Err(format!("`{host}` has no addresses"));
    }
    Ok(addresses)
}

fn refuse_private(agent: &str, host: &str, addresses: &[SocketAddr]) -> Result<(), std::io::Error> {
    match addresses
        .iter()
        .find_map(|address| judge(address.ip()).err())
    {
        Some(not_public) => Err(std::io::Error::other(format!(
            "`{host}` is {not_public}: not a public address; the agent `{agent}` may be on such \
             an address only with `[agents.{agent}] allow_private = true`"
        ))),
        None => Ok(()),
    }
}

/// Resolves host names for one agent's client, refusing what is not public.
pub(crate) struct AgentResolver {
    pub(crate) agent: String,
    pub(crate) allow_private: bool,
}

impl Resolve for AgentResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let (agent, allow_private) = (self.agent.clone(), self.allow_private);
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addresses = resolve(&host, 0).await.map_err(std::io::Error::other)?;
            if !allow_private {
                refuse_private(&agent, &host, &addresses)?;
            }
            let addresses: Addrs = Box::new(addresses.into_iter());
            Ok(addresses)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn private_addresses_need_the_agents_own_permission() {
        let loopback = Url::parse("http://127.0.0.1:9/").expect("a URL");
        let error = check("helper", &loopback, false)
            .await
            .expect_err("loopback");
        assert!(
            error.contains("[agents.helper] allow_private = true"),
            "{error}"
        );
        check("helper", &loopback, true)
            .await
            .expect("allowed for this agent");
        let mapped = Url::parse("http://[64:ff9b::169.254.169.254]/").expect("a URL");
        assert!(check("helper", &mapped, false).await.is_err());
        let credentials = Url::parse("http://me:pw@example.com/").expect("a URL");
        assert!(check("helper", &credentials, true).await.is_err());
    }
}
