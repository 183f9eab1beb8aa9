export { SourceChangeService, SOURCE_MIME, type SourceChangeRequest, type SourceChangeResult } from './source-change.service';
export { SourceReconciler, type ReconcileReport } from './reconciler';
export { KeyedLock } from './keyed-lock';
export { WebhookIntake, type WebhookIntakeOptions, type WebhookAnswer } from './webhook-intake';
