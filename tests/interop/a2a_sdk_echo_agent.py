"""An echo agent served by the official A2A Python SDK (a2a-sdk, PyPI), for
the delegation tests (tests/e2e/tools/delegate.rs): tiny-harness, as an A2A
client, delegates a task to it.

Usage: python3 a2a_sdk_echo_agent.py PORT

Each message starts a task that reports one WORKING update (`echoing`) and
completes with `echo: <the message's text>`. JSON-RPC (with SSE) on
http://127.0.0.1:PORT/, the card at /.well-known/agent-card.json.
"""

import sys

import uvicorn
from starlette.applications import Starlette

from a2a.helpers.proto_helpers import new_task, new_text_status_update_event
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes.agent_card_routes import create_agent_card_routes
from a2a.server.routes.jsonrpc_routes import create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, TaskState


class Echo(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = context.task_id, context.context_id
        await event_queue.enqueue_event(
            new_task(task_id, context_id, TaskState.TASK_STATE_WORKING)
        )
        await event_queue.enqueue_event(
            new_text_status_update_event(
                task_id, context_id, TaskState.TASK_STATE_WORKING, "echoing"
            )
        )
        await event_queue.enqueue_event(
            new_text_status_update_event(
                task_id,
                context_id,
                TaskState.TASK_STATE_COMPLETED,
                f"echo: {context.get_user_input()}",
            )
        )

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await event_queue.enqueue_event(
            new_text_status_update_event(
                context.task_id,
                context.context_id,
                TaskState.TASK_STATE_CANCELED,
                "cancelled",
            )
        )


def main() -> None:
    port = int(sys.argv[1])
    card = AgentCard(
        name="python-echo",
        description="Echoes each message (a2a-sdk).",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(
                url=f"http://127.0.0.1:{port}/",
                protocol_binding="JSONRPC",
                protocol_version="1.0",
            )
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="Echoes the message.", tags=["echo"])],
    )
    handler = DefaultRequestHandler(
        agent_executor=Echo(), task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(handler, "/")
    uvicorn.run(Starlette(routes=routes), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
