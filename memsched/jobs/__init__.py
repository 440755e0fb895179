"""Background work: a durable job queue in the store, task functions per job kind, and workers.

`JobQueue` (enqueue, claim, complete, fail, retry, the P1 barrier `wait_for`), `SessionLock` (one turn
per session at a time, across processes), `task` (register a job kind), `Worker` (threads that run jobs).
"""

from memsched.jobs.queue import Job, JobQueue, Priority, SessionLock
from memsched.jobs.tasks import TaskContext, UnknownTaskError, get_task, registered, task
from memsched.jobs.worker import Worker

__all__ = [
    "Job",
    "JobQueue",
    "Priority",
    "SessionLock",
    "TaskContext",
    "UnknownTaskError",
    "Worker",
    "get_task",
    "registered",
    "task",
]
