// Package sbatch knows what the sbatch of a Slurm release accepts: its
// options and whether each takes a value (the built-in table of Slurm 22.05,
// and the tables learned from a site's own `sbatch --help` and `--usage`),
// and checks and splits the sbatch flags of a pod against them, as
// interLink's Slurm plugin reads them. Everything sluice knows that depends
// on the Slurm version is here, so that the job script (which writes the
// flags) and the Slurm client (which learns the site's table) read the same.
package sbatch
