"""The run core: what a fine-tuning run is, below training, checkpoints, exports and the tasks
that all read it. `registry` holds the task kinds (each names its task folder's modules as data,
imported only when asked for); `record` is what a run leaves beside its checkpoints
(`fine_tuning_task.json`); `diverged` reads the file a run whose training diverged leaves.
Importing this package loads none of the tasks."""
