// Server-Sent Events over fetch: EventSource can only GET and cannot send headers, and
// A2A streams answer a POST with identity headers. Only `data:` matters here (the server
// sends no event names or ids); comment lines are keep-alives.

/** The `data` of each event of a `text/event-stream` response, parsed as JSON. */
export async function* dataEvents(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = dataOf(block);
        if (data !== null) yield JSON.parse(data);
      }
    }
  } finally {
    reader.releaseLock();
  }
}

/** The joined `data:` lines of one event block, or null when it has none. */
function dataOf(block) {
  const lines = block
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => line.slice(5).replace(/^ /, ''));
  return lines.length ? lines.join('\n') : null;
}
