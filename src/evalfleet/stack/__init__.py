"""The services evalfleet starts: the long-lived stack of `evalfleet up` / `down` (a Prefect
server, the deployments' runner, a Ray head) and the temporary ones a single command starts
for itself (`services.LocalStack`)."""
