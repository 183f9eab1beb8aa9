import './tracing';
import { LoaderModule, runStandalone } from '@rag/services';

void runStandalone('loader', [LoaderModule], ['bus']);
