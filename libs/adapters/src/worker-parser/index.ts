export { WorkerDocumentParser, type WorkerParserOptions } from './worker-parser.adapter';
