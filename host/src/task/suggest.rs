//! Command completion for renderers: what a participant may type next.
//!
//! Checked like the command itself would be when sent: a watcher runs no command, so it
//! gets no suggestions; anyone else gets the commands their role may run (an admin, all of
//! them), and a command's argument suggestions only when they may run that command. The
//! argument suggestions come from the completion export of the plugin serving the
//! command's body ([`CommandRegistry::complete`]), bounded by that plugin's deadline.

use serde::Serialize;

use crate::a2a::error::A2aError;
use crate::commands::{CommandFailure, CommandRegistry, CommandSpec, Suggestion};
use crate::domain::Role;

/// The answer to a completion request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Completion {
    /// The caller's role on the task (or the role a conversation they start gives them),
    /// which the suggestions were checked against; renderers show or hide controls by it.
    pub role: Role,
    /// What may follow the text: `/name` lines while the name is typed, then values for
    /// the argument being typed.
    pub suggestions: Vec<Suggestion>,
}

/// Whether `role` may run `spec`, by the rule the built-in role policy enforces.
pub(crate) fn may_run(role: Role, spec: &CommandSpec) -> bool {
    match role {
        Role::Watcher => false,
        Role::Admin => true,
        _ => spec.roles.contains(&role),
    }
}

/// The suggestions for `text` typed by someone of `role`.
pub(crate) async fn suggest(
    registry: &CommandRegistry,
    role: Role,
    text: &str,
) -> Result<Vec<Suggestion>, A2aError> {
    let Some(rest) = text.strip_prefix('/') else {
        return Ok(Vec::new());
    };
    let Some((name, _partial)) = rest.split_once(char::is_whitespace) else {
        return Ok(registry
            .commands()
            .filter(|command| command.spec.name.starts_with(rest) && may_run(role, &command.spec))
            .map(|command| Suggestion {
                value: format!("/{}", command.spec.name),
                description: Some(command.spec.description.clone()),
            })
            .collect());
    };
    match registry.get(name) {
        Some(command) if may_run(role, &command.spec) => {
            registry.complete(text).await.map_err(completion_failed)
        }
        _ => Ok(Vec::new()),
    }
}

/// A completion export that trapped, timed out or answered out of shape: the renderer
/// shows this rather than an empty list that would look like "nothing to suggest".
fn completion_failed(failure: CommandFailure) -> A2aError {
    A2aError::Internal(failure.to_string())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::commands::{ArgumentSpec, ArgumentType, Completer, Invocation, NativeBody, Outcome};
    use crate::hooks::{BoxFuture, ExecutorFault};

    struct Fruit;

    impl Completer for Fruit {
        fn complete<'a>(
            &'a self,
            _command: &'a str,
            partial: &'a str,
        ) -> BoxFuture<'a, Result<Vec<Suggestion>, ExecutorFault>> {
            Box::pin(async move {
                Ok(["apple", "banana"]
                    .iter()
                    .filter(|fruit| fruit.starts_with(partial))
                    .map(|fruit| Suggestion {
                        value: (*fruit).to_owned(),
                        description: None,
                    })
                    .collect())
            })
        }
    }

    fn spec(name: &str, roles: Vec<Role>) -> CommandSpec {
        CommandSpec {
            name: name.to_owned(),
            description: format!("the {name} command"),
            usage: format!("/{name} <fruit>"),
            arguments: vec![ArgumentSpec {
                name: "fruit".to_owned(),
                kind: ArgumentType::String,
                required: false,
                description: None,
            }],
            roles,
            timeout_ms: 2000,
        }
    }

    fn registry() -> CommandRegistry {
        let mut builder = CommandRegistry::builder();
        let body = || Arc::new(NativeBody(|_: &Invocation| Ok(Outcome::text("ok"))));
        builder
            .register(spec("eat", vec![Role::Reporter, Role::Assignee]), body())
            .expect("eat");
        builder
            .register(spec("evict", vec![Role::Admin]), body())
            .expect("evict");
        builder.set_completer("eat", 1000, Arc::new(Fruit));
        builder.set_completer("evict", 1000, Arc::new(Fruit));
        builder.freeze().0
    }

    fn values(suggestions: Vec<Suggestion>) -> Vec<String> {
        suggestions.into_iter().map(|s| s.value).collect()
    }

    #[tokio::test]
    async fn names_are_the_commands_the_role_may_run() {
        let registry = registry();
        let names = |role| {
            let registry = registry.clone();
            async move { values(suggest(&registry, role, "/e").await.expect("names")) }
        };
        assert_eq!(names(Role::Reporter).await, ["/eat"]);
        assert_eq!(names(Role::Admin).await, ["/eat", "/evict"]);
        assert!(names(Role::Watcher).await.is_empty());
    }

    #[tokio::test]
    async fn arguments_need_a_role_the_command_allows() {
        let registry = registry();
        let eat = suggest(&registry, Role::Assignee, "/eat b").await;
        assert_eq!(values(eat.expect("args")), ["banana"]);
        let evict = suggest(&registry, Role::Reporter, "/evict a").await;
        assert!(evict.expect("none").is_empty());
        let evict = suggest(&registry, Role::Admin, "/evict a").await;
        assert_eq!(values(evict.expect("args")), ["apple"]);
        let watcher = suggest(&registry, Role::Watcher, "/eat ").await;
        assert!(watcher.expect("none").is_empty());
    }

    #[tokio::test]
    async fn plain_text_and_unknown_commands_get_nothing() {
        let registry = registry();
        assert!(
            suggest(&registry, Role::Reporter, "eat")
                .await
                .expect("none")
                .is_empty()
        );
        assert!(
            suggest(&registry, Role::Reporter, "/nope a")
                .await
                .expect("none")
                .is_empty()
        );
    }
}
