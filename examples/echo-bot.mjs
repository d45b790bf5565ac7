// A whole agent: verifies each event Parley sends it and answers every message it receives.
// PARLEY_URL, PARLEY_KEY (an agent key with Channels), WEBHOOK_SECRET (from `demo --hook-url` or `endpoint create`), PORT.
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';

const { PARLEY_URL = 'http://127.0.0.1:3000', PARLEY_KEY, WEBHOOK_SECRET, PORT = '4000' } = process.env;
const webhook = new Webhook(WEBHOOK_SECRET);
const answer = (to, text, eventId) =>
  fetch(`${PARLEY_URL}/api/channels/send`, {
    method: 'POST',
    // The event's ID as Idempotency-Key: a redelivered event never answers twice.
    headers: { authorization: `Bearer ${PARLEY_KEY}`, 'content-type': 'application/json', 'idempotency-key': eventId },
    body: JSON.stringify({ channel: 'msgapp', to, type: 'message', message: { text } }),
  });

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
    if (event.type === 'message.received')
      answer(event.data.from, `You said: ${event.data.text}`, req.headers['webhook-id']);
  });
}).listen(Number(PORT), '127.0.0.1', () => console.log(`echo bot on http://127.0.0.1:${PORT}`));
