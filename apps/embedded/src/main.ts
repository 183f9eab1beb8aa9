import './tracing';
import { runEmbedded } from '@rag/services';

void runEmbedded();
