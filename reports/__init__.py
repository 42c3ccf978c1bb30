"""What people read after a run: result tables, the leaderboard and its plots, status views."""
