"""Asking: fan the planned items out on Ray (online), or in provider batch jobs, with the
run's progress shown as it goes."""
