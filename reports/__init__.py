"""What people read after a run: result tables, the run report (every answer), comparisons
of runs, the leaderboard with its rank intervals and plots, status views."""
