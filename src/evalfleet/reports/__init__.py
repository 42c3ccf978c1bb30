"""What people read after a run: result tables, the run report (every answer), comparisons
of runs, the leaderboard with its rank intervals and plots, status views."""

MEDIA_BUDGET_MB = 20.0  # a run report's images and audio in all, their tiles included
