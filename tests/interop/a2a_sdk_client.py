"""Interoperability check: the official A2A Python SDK (a2a-sdk, PyPI)
against a running tiny-harness.

Usage: python3 a2a_sdk_client.py http://127.0.0.1:PORT

Drives send, stream, get, list, a command, and cancel through the SDK's own
client (card resolution, JSON-RPC transport, SSE parsing), and exits non-zero
with a message on the first mismatch. Prints `N passed, 0 failed` at the end.
"""

import asyncio
import sys
import uuid

import httpx
from a2a.client import ClientConfig, create_client
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)

INPUT_REQUIRED = TaskState.TASK_STATE_INPUT_REQUIRED
checks = 0


def check(condition, what):
    global checks
    if not condition:
        raise SystemExit(f"FAILED: {what}")
    checks += 1
    print(f"ok {checks} - {what}")


def message(text, task_id=None):
    msg = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)])
    if task_id:
        msg.task_id = task_id
    return SendMessageRequest(message=msg)


def status_text(task):
    return "".join(part.text for part in task.status.message.parts)


async def last_task(client, request):
    """Send through the SDK and return the final Task it reports."""
    task = None
    async for event in client.send_message(request):
        if event.HasField("task"):
            task = event.task
        elif event.HasField("status_update") and task is not None:
            task.status.CopyFrom(event.status_update.status)
    return task


async def main(url):
    headers = {"X-Participant-Id": "python-sdk"}
    async with httpx.AsyncClient(headers=headers, timeout=60) as http:
        plain = await create_client(url, ClientConfig(streaming=False, httpx_client=http))
        streaming = await create_client(url, ClientConfig(streaming=True, httpx_client=http))

        task = await last_task(plain, message("hello from the python sdk"))
        check(task is not None and task.status.state == INPUT_REQUIRED, "send parks the task in INPUT_REQUIRED")
        check(task.metadata["sub_state"] == "awaiting-next-message", "sub_state is in Task.metadata")
        check("hello from the python sdk" in status_text(task), "the reply echoes the message")
        task_id = task.id

        events = [event async for event in streaming.send_message(message("work for 1 seconds", task_id))]
        check(events and events[0].HasField("task"), "a stream starts with the Task")
        last = events[-1]
        check(last.HasField("status_update") and last.status_update.status.state == INPUT_REQUIRED,
              "a stream ends when the turn parks")

        fetched = await plain.get_task(GetTaskRequest(id=task_id, history_length=2))
        check(fetched.id == task_id and len(fetched.history) == 2, "get returns the task with historyLength")

        listed = await plain.list_tasks(ListTasksRequest(page_size=10))
        check(any(t.id == task_id for t in listed.tasks), "list includes the conversation")

        status = await last_task(plain, message("/status", task_id))
        check("State: TASK_STATE" in status_text(status), "a command runs on the harness")
        check(status.status.state == INPUT_REQUIRED, "the task parks after a command")

        canceled = await plain.cancel_task(CancelTaskRequest(id=task_id))
        check(canceled.status.state == TaskState.TASK_STATE_CANCELED, "cancel cancels")

    print(f"{checks} passed, 0 failed")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
