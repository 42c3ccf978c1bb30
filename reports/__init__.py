"""What people read after a run: result tables, the run report (every answer), comparisons
of runs, the leaderboard with its rank intervals and plots, status views."""

MEDIA_BUDGET_MB = 40.0  # a run report's full-size images and audio, in all (thumbnails apart)
