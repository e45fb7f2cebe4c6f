// The floor of bench/api and bench/send: the least a Koa app can do for one JSON route, on PORT.
// GET /floor answers a small JSON object; POST /floor reads and parses a JSON body first (what
// any JSON API must do before its own work), then answers an id.
import Koa from 'koa';

const app = new Koa();
app.use(async (ctx) => {
  if (ctx.path !== '/floor') return;
  if (ctx.method === 'POST') {
    const chunks: Buffer[] = [];
    for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
    ctx.body = { id: Array.isArray(body) ? 'batch' : 'em_01ARZ3NDEKTSV4RRFFQ69G5FAV' };
    return;
  }
  ctx.body = { id: 'key_01ARZ3NDEKTSV4RRFFQ69G5FAV', mode: 'live' };
});
const server = app.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
