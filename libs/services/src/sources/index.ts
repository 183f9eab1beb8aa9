export { SourcesModule, ReconcileScheduler } from './sources.module';
