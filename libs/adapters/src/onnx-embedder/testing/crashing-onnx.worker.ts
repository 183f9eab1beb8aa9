/**
 * Test worker for OnnxWorkerHost's thread-failure handling: loads no model (so no ONNX Runtime in this thread); an
 * `embed` whose first text is CRASH exits the thread mid-task, anything else answers `unavailable` as a value, as the
 * real worker does for a model it has not loaded.
 */
export default function crashingOnnxTask(task: { op?: unknown; texts?: unknown[] }): unknown {
  if (task?.op === 'embed' && task.texts?.[0] === 'CRASH') process.exit(3);
  return { ok: false, code: 'unavailable', message: 'no model is loaded in this test worker' };
}
