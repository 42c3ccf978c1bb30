"""What a run is: its request, its identity, its work items and their states, and how it
ends (an outcome, a signal, a failure). The vocabulary every other room of the engine uses."""
