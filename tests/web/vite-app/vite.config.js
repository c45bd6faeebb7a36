// Module workers with imports (runnel-llm's engine worker) need the 'es' worker format.
export default { worker: { format: 'es' }, build: { target: 'es2022' }, logLevel: 'warn' };
