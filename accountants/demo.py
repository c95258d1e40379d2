"""The accounting demo: ``python -m accountants.demo`` prints epsilon for a DP-SGD setting and a Laplace/RR mix.

Every report printed says what its number is (add-or-remove-one neighbours): a proven upper bound, or an
estimate (the Fourier accountant where a characteristic function comes from a quadrature with an estimated error,
e.g. the subsampled Laplace; the subsampled Gaussian's is a proven enclosure).
"""

import argparse
import sys

from dpledger.accountants.calibration import calibrate_gaussian_sigma
from dpledger.accountants.fourier_accountant import FourierAccountant
from dpledger.accountants.rdp_accountant import RDPAccountant
from dpledger.mechanisms import GaussianMechanism, LaplaceMechanism, PoissonSubsampled, RandomizedResponse


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m accountants.demo", description=__doc__)
    parser.add_argument("--delta", type=float, default=1e-5, help="target delta (default 1e-5)")
    args = parser.parse_args(argv)
    if not 0.0 < args.delta < 1.0:
        parser.error(f"--delta must be in (0, 1); got {args.delta}")
    delta = args.delta
    out = sys.stdout

    q, sigma, steps = 256 / 60_000, 1.1, 14_062
    sgd = PoissonSubsampled(GaussianMechanism(sigma=sigma), sampling_probability=q)
    report = RDPAccountant().compose(sgd, count=steps).epsilon_report(delta)
    print("DP-SGD: Poisson-subsampled Gaussian", file=out)
    print(f"  sampling probability {q:.5f}, noise multiplier {sigma}, {steps} steps (60 epochs of MNIST)", file=out)
    print(f"  {report}", file=out)
    fourier = FourierAccountant().compose(sgd, count=steps).epsilon_report(delta)
    print(f"  {fourier}", file=out)
    target = 1.0
    needed = calibrate_gaussian_sigma(target, delta, sampling_probability=q, count=steps)
    print(f"  noise multiplier needed for epsilon <= {target}: {needed:.4f}", file=out)

    mix = RDPAccountant().compose(LaplaceMechanism(scale=20.0), count=50).compose(RandomizedResponse(p=0.55), count=100)
    print("Laplace(scale 20) x 50 composed with randomized response(p = 0.55) x 100", file=out)
    print(f"  {mix.epsilon_report(delta)}", file=out)
    print(f"  pure DP by basic composition: epsilon = {mix.rdp(float('inf')):.4f}", file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
