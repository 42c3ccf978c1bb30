"""After the answers: score every stored record, compute each benchmark's metrics, what it
cost, how far judges agree, and write the results versions."""
