// Imported first by main.ts: the OpenTelemetry SDK starts before anything else is loaded. `rag start` is the
// embedded platform; other commands trace the in-process platform they may start as `rag-cli`.
import { shutdownTracing, startTracing } from '@rag/platform';

startTracing(process.argv[2] === 'start' ? 'embedded' : 'cli');
// Short-lived commands: export what is buffered before the process ends.
process.once('beforeExit', () => void shutdownTracing());
