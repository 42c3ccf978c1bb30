"""`python -m stack.warm_workers COUNT`: start the warm worker actors (`tasks.pool`) on the
Ray cluster RAY_ADDRESS names, and return once they answer. They live as long as the cluster:
`evalfleet up --ray` runs this after starting its head, so that a run borrows workers whose
process, Ray connection and SDK imports are already made."""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    import ray

    from evalfleet.engine.generation.ray_session import ensure_ray
    from evalfleet.tasks.pool import start_warm

    count = int(argv[0]) if argv else 2
    ensure_ray()  # the cluster RAY_ADDRESS names, as a run's driver joins it
    try:
        start_warm(count)
    finally:
        ray.shutdown()
    print(f"{count} warm workers answer")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
