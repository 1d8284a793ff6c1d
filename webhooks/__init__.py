"""The GitHub App: webhook service (app), queue and ledger (queue, store), jobs (jobs), the review
lifecycle (reviewing), `/pr-check` (commands, command_requests), the GPU smoke job's App side
(smoke_runs), redelivery, workers (worker) and the `serve`/`worker` entry points (cli)."""
