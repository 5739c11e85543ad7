// The prediction and per-instance record live beside the queued results (a runner's eval round writes them too).
export { InstanceRecordSchema, PredictionSchema, type InstanceRecord, type Prediction } from '../queue/evalResults.js';
