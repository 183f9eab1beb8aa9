// Imported first by main.ts: the OpenTelemetry SDK starts before anything else of the service is loaded.
import { startTracing } from '@rag/platform';

startTracing('generator');
