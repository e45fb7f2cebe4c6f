-- One audit action name per act: the console now writes the names the API writes
-- (domain.created, domain.updated, organization.paused, organization.resumed,
-- organization.updated, webhook_delivery.replayed). Rows written before under the console's
-- former names are renamed, so that filtering by action finds every row of an act.
update audit_log set action = case action
    when 'domain.added' then 'domain.created'
    when 'domain.tracking_changed' then 'domain.updated'
    when 'organization.sending_paused' then 'organization.paused'
    when 'organization.sending_resumed' then 'organization.resumed'
    when 'organization.tracking_changed' then 'organization.updated'
    when 'organization.alert_rule_added' then 'organization.updated'
    when 'organization.alert_rule_removed' then 'organization.updated'
    when 'webhook.delivery_replayed' then 'webhook_delivery.replayed'
  end
  where action in ('domain.added', 'domain.tracking_changed', 'organization.sending_paused',
    'organization.sending_resumed', 'organization.tracking_changed', 'organization.alert_rule_added',
    'organization.alert_rule_removed', 'webhook.delivery_replayed');
