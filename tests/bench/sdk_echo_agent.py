"""The official A2A Python SDK (a2a-sdk 1.3.0) serving an echo agent that parks
its tasks the way tiny-harness does: every turn ends in TASK_STATE_INPUT_REQUIRED
with the reply as the status message, and the next message continues the task.

It is the baseline of the side-by-side benchmark (tests/bench/run.sh): the SDK's
default request handler and in-memory task store, served by uvicorn on loopback.

    python3 tests/bench/sdk_echo_agent.py --port 9100
"""

import argparse
import logging

import uvicorn
from starlette.applications import Starlette

from a2a.helpers.proto_helpers import get_message_text, new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, TaskState


class ParkingEcho(AgentExecutor):
    """Echoes the message and parks the task in INPUT_REQUIRED."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        text = get_message_text(context.message)
        reply = updater.new_agent_message(parts=[])
        reply.parts.add(text=f"You said: {text}")
        await updater.update_status(TaskState.TASK_STATE_INPUT_REQUIRED, reply)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is not None:
            await TaskUpdater(event_queue, task.id, task.context_id).cancel()


def app(port: int) -> Starlette:
    url = f"http://127.0.0.1:{port}/"
    card = AgentCard(
        name="sdk-echo",
        description="Echoes and parks (the benchmark baseline)",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
    )
    handler = DefaultRequestHandler(
        agent_executor=ParkingEcho(), task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(handler, rpc_url="/")
    return Starlette(routes=routes)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=9100)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    uvicorn.run(app(args.port), host="127.0.0.1", port=args.port, log_level="warning",
                access_log=False)
