// An agent that answers a photo: marks it read with the typing indicator, fetches the file, and
// replies quoting it with two buttons; a tap on a button gets a text back.
// PARLEY_URL, PARLEY_KEY (an agent key with Channels), WEBHOOK_SECRET (of the agent's endpoint), PORT.
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';

const { PARLEY_URL = 'http://127.0.0.1:3000', PARLEY_KEY, WEBHOOK_SECRET, PORT = '4001' } = process.env;
const webhook = new Webhook(WEBHOOK_SECRET);
const api = (path, body, idempotencyKey) =>
  fetch(`${PARLEY_URL}${path}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${PARLEY_KEY}`,
      'content-type': 'application/json',
      ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
    },
    body: JSON.stringify(body),
  });
const send = (to, message, eventId) =>
  api('/api/channels/send', { channel: 'msgapp', to, type: 'message', message }, eventId);

async function answer(event, eventId) {
  const { from, messageId, type, media, reply } = event.data;
  if (type === 'image' && media?.available) {
    await api(`/api/messages/${encodeURIComponent(messageId)}/read`, { typing: true });
    // The photo itself, e.g. for a model to look at: GET /api/media/{id} (media.url) with the same key.
    const photo = await fetch(`${PARLEY_URL}/api/media/${media.id}`, {
      headers: { authorization: `Bearer ${PARLEY_KEY}` },
    });
    const bytes = Buffer.from(await photo.arrayBuffer());
    await send(
      from,
      {
        text: `Thanks, we got your photo (${Math.ceil(bytes.length / 1024)} KB). What would you like us to do?`,
        replyTo: messageId,
        buttons: [
          { id: 'refund', title: 'Refund' },
          { id: 'replace', title: 'Send a new one' },
        ],
      },
      eventId,
    );
  } else if (reply?.kind === 'button') {
    await send(from, { text: `You chose: ${reply.title}. We are on it.` }, eventId);
  }
}

createServer((req, res) => {
  let body = '';
  req.on('data', (chunk) => (body += chunk));
  req.on('end', () => {
    let event;
    try {
      event = webhook.verify(body, req.headers); // throws on a bad or old signature
    } catch {
      return res.writeHead(401).end();
    }
    res.writeHead(204).end(); // acknowledge at once, answer after
    if (event.type === 'message.received') answer(event, req.headers['webhook-id']).catch(console.error);
  });
}).listen(Number(PORT), '127.0.0.1', () => console.log(`photo bot on http://127.0.0.1:${PORT}`));
