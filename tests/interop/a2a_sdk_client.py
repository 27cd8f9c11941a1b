"""Interoperability check: the official A2A Python SDK (a2a-sdk, PyPI)
against a running tiny-harness.

Usage: python3 a2a_sdk_client.py http://127.0.0.1:PORT [JSONRPC|HTTP+JSON|GRPC]

Drives the SDK's own client (card resolution, then the named binding's
transport: JSON-RPC or HTTP+JSON with SSE, or gRPC, which needs
`pip install 'a2a-sdk[grpc]'`) through a conversation (send, stream, get,
list, a command, completion with the control envelope, cancel), a one-shot
task (`metadata.lifecycle = "task"`) and an error, and exits non-zero with a
message on the first mismatch. Prints `N passed, 0 failed` at the end.
"""

import asyncio
import sys
import uuid

import httpx
from google.protobuf import json_format
from a2a.client import ClientCallContext, ClientConfig, create_client
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    SendMessageRequest,
    TaskState,
)
from a2a.utils.errors import TaskNotFoundError

INPUT_REQUIRED = TaskState.TASK_STATE_INPUT_REQUIRED
COMPLETED = TaskState.TASK_STATE_COMPLETED
PARTICIPANT = "python-sdk"
checks = 0


def check(condition, what):
    global checks
    if not condition:
        raise SystemExit(f"FAILED: {what}")
    checks += 1
    print(f"ok {checks} - {what}")


def message(text=None, task_id=None, data=None, metadata=None):
    """A user message from its ProtoJSON: one text part, or one data part."""
    fields = {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": [{"data": data} if data is not None else {"text": text}],
    }
    if task_id:
        fields["taskId"] = task_id
    if metadata:
        fields["metadata"] = metadata
    return SendMessageRequest(message=json_format.ParseDict(fields, Message()))


def status_text(task):
    return "".join(part.text for part in task.status.message.parts)


async def last_task(client, request, context):
    """Send through the SDK and return the final Task it reports."""
    task = None
    async for event in client.send_message(request, context=context):
        if event.HasField("task"):
            task = event.task
        elif event.HasField("status_update") and task is not None:
            task.status.CopyFrom(event.status_update.status)
    return task


def grpc_channel(url):
    import grpc  # only the gRPC binding needs it

    return grpc.aio.insecure_channel(url)


async def main(url, binding):
    headers = {"X-Participant-Id": PARTICIPANT}
    # The participant rides in the HTTP headers (JSON bindings) or, as a
    # service parameter, in the gRPC metadata.
    context = ClientCallContext(service_parameters={"X-Participant-Id": PARTICIPANT})
    async with httpx.AsyncClient(headers=headers, timeout=60) as http:
        def config(streaming):
            return ClientConfig(
                streaming=streaming,
                httpx_client=http,
                supported_protocol_bindings=[binding],
                grpc_channel_factory=grpc_channel,
            )

        plain = await create_client(url, config(False))
        streaming = await create_client(url, config(True))

        task = await last_task(plain, message(f"hello over {binding}"), context)
        check(task is not None and task.status.state == INPUT_REQUIRED, "send parks the task in INPUT_REQUIRED")
        check(task.metadata["sub_state"] == "awaiting-next-message", "sub_state is in Task.metadata")
        check(f"hello over {binding}" in status_text(task), "the reply echoes the message")
        task_id = task.id

        events = [e async for e in streaming.send_message(message("work for 1 seconds", task_id), context=context)]
        check(events and events[0].HasField("task"), "a stream starts with the Task")
        last = events[-1]
        check(last.HasField("status_update") and last.status_update.status.state == INPUT_REQUIRED,
              "a stream ends when the turn parks")

        fetched = await plain.get_task(GetTaskRequest(id=task_id, history_length=2), context=context)
        check(fetched.id == task_id and len(fetched.history) == 2, "get returns the task with historyLength")

        listed = await plain.list_tasks(ListTasksRequest(page_size=10), context=context)
        check(any(t.id == task_id for t in listed.tasks), "list includes the conversation")

        status = await last_task(plain, message("/status", task_id), context)
        check("State: TASK_STATE" in status_text(status), "a command runs on the harness")
        check(status.status.state == INPUT_REQUIRED, "the task parks after a command")

        control = {"kind": "control", "action": "complete"}
        done = await last_task(plain, message(task_id=task_id, data=control), context)
        check(done.status.state == COMPLETED, "the control envelope completes the conversation")

        other = await last_task(plain, message("one more"), context)
        canceled = await plain.cancel_task(CancelTaskRequest(id=other.id), context=context)
        check(canceled.status.state == TaskState.TASK_STATE_CANCELED, "cancel cancels")

        one_shot = await last_task(plain, message("just once", metadata={"lifecycle": "task"}), context)
        check(one_shot.status.state == COMPLETED, "a one-shot task completes on its own")
        reply = [a for a in one_shot.artifacts if a.artifact_id == "reply-1"]
        check(reply and reply[0].parts[0].text == status_text(one_shot),
              "its reply is both the status message and an artifact")

        try:
            await plain.get_task(GetTaskRequest(id="no-such-task"), context=context)
            check(False, "an unknown task is an error")
        except TaskNotFoundError:
            check(True, "an unknown task is TaskNotFoundError")

    print(f"{checks} passed, 0 failed")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "JSONRPC"))
