-- Opens and clicks judged a machine's (DESIGN §20) are counted apart from people's.
alter table metrics_daily
  add column opened_machine bigint not null default 0,
  add column clicked_machine bigint not null default 0;
alter table metrics_daily_totals
  add column opened_machine bigint not null default 0,
  add column clicked_machine bigint not null default 0;
alter table metrics_daily_facets
  add column opened_machine bigint not null default 0,
  add column clicked_machine bigint not null default 0;
