// The floor of bench/api: the least a Koa app can do for one JSON route, on PORT.
import Koa from 'koa';

const app = new Koa();
app.use(async (ctx) => {
  if (ctx.path === '/floor') ctx.body = { id: 'key_01ARZ3NDEKTSV4RRFFQ69G5FAV', mode: 'live' };
});
const server = app.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
