export { REFUSAL_MESSAGE, buildAnswerPrompt, isRefusalAnswer } from './prompt';
export type { PromptMessage, PromptSource } from './prompt';
export { parseCitations } from './citations';
export { extractiveAnswer } from './extractive';
export type { ExtractiveAnswer, ExtractiveOptions, ExtractiveSource } from './extractive';
export { evidenceScore, gateEstimate, gateEvidence, gateSignals, idfCoverage, scoreGap, shouldRefuse } from './evidence';
export type { GateOptions, GateSignals, RefusalDecision } from './evidence';
export {
  CALIBRATED_THRESHOLD,
  DEFAULT_CALIBRATION,
  DEFAULT_TARGET,
  MIN_SPREAD,
  Z_MAX,
  Z_FLOOR,
  DENSE_WEIGHT,
  calibrateScript,
  calibrationStale,
  combinedEvidence,
  probeZ,
  gateScriptOf,
  idf,
  pseudoQuery,
  quantile,
  questionTermWeights,
  seededRandom,
  tenantOfDocumentId,
  termDf,
  termStatsOf,
  unseenIdf,
} from './calibration';
export type { CalibrationOptions, GateCalibration, GateScript, ScriptCalibration, SignalScale, TermStats } from './calibration';
export { GATE_PROBES } from './calibration-probes';
export { LexicalMemo } from './lexical-memo';
export type { LexicalMemoOptions, LexicalMemoStats } from './lexical-memo';
export { groundingTaskProblem, runGrounding } from './grounding';
export type { GroundingMode, GroundingResult, GroundingTask } from './grounding';
export { STATEMENTS_JSON_SCHEMA, parseStructuredStatements, renderStatements, statementsFromCitedText, withoutCitations } from './statements';
export type { AnswerStatement } from './statements';
export { SUPPORT_THRESHOLD, VERIFY_MODES, verifyStatements } from './verify';
export type { VerifiedStatement, VerifyMode, VerifyOptions, VerifySource, Verification } from './verify';
