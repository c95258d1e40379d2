"""Published privacy numbers that other libraries assert in their tests.

Plain data only (no imports of the library).  Every entry records where the
number comes from (repository, file, commit of the stored copy or installed
version, test name), the exact setting, the tolerance the source asserts, and
what kind of number it is:

``"rdp"``
    RDP epsilon at the listed order(s) (add/remove-one, Poisson sampling).
``"epsilon_on_grid"``
    epsilon from RDP minimised over the fixed order grid in ``orders`` with the
    conversion in ``conversion``.  Depends on the grid; not an exact epsilon.
``"exact_epsilon"`` / ``"exact_delta"``
    the true (tight) privacy profile value for the setting.
``"estimate_epsilon"`` / ``"estimate_delta"``
    a numerical (PRV/PLD/CLT) value: an estimate or a numerical upper bound.
``"calibrated_sigma"``
    noise multiplier returned by a calibration search (depends on its tolerance).

Conversions (RDP -> epsilon at ``delta``, per order ``a``):
``"balle2020"``: eps = rdp - (log(delta) + log(a)) / (a - 1) + log((a - 1) / a)
(Balle et al. 2020, Thm 21; Opacus ``get_privacy_spent``, dp_accounting
``compute_epsilon``, equivalent to Canonne-Kamath-Steinke 2020 Prop 12).

``recomputed`` holds what *I* obtained for the same setting with the installed
reference packages (opacus 1.6.0, dp_accounting 0.6.0, prv_accountant 0.2.0) and
with the mpmath oracles in ``tests/oracles`` ("oracle").  A number is listed only
if it was read in the source; nothing here is invented.

Surprise (see entries ``dpacc_050_steps_old`` / ``dpacc_050_steps_060``):
dp_accounting 0.6.0 returns, at *fractional* orders, an upper bound (it sums
|binomial| terms in ``_compute_log_a_frac``) rather than the exact RDP.  The
exact values (mpmath quadrature, 50 digits) agree with TF Privacy, older
dp_accounting and Opacus.  Grid epsilons that land on a fractional order inherit
this: Opacus' setting recomputed with dp_accounting 0.6.0 gives 7.329334702
instead of 7.329111171.
"""

OPACUS_ALPHAS = tuple([1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64)))
"""Opacus ``RDPAccountant.DEFAULT_ALPHAS`` (opacus/accountants/rdp.py), 151 orders."""

TF_PRIVACY_DPSGD_ORDERS = tuple([1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0, 3.5, 4.0, 4.5]
                                + list(range(5, 64)) + [128, 256, 512])
"""Grid of TF Privacy ``compute_dp_sgd_privacy_lib.compute_dp_sgd_privacy``, 72 orders."""

FINE_GRID_0001 = "[0.001 * i for i in range(1000, 100000)]"
"""Grid of the dp_accounting / TF Privacy Gaussian conversion test (99,000 orders; kept as text)."""

_TF_RDP_TEST = dict(repo="tensorflow/privacy",
                    path="tensorflow_privacy/privacy/analysis/rdp_accountant_test.py",
                    commit="09270afed61a4e9ef6295217b53731f7515f0350")
_DPACC_GH = dict(repo="google/differential-privacy",
                 path="python/dp_accounting/rdp/rdp_privacy_accountant_test.py",
                 commit="025111e75114a96b8d54ba88e483a2b0f99a2954")
_DPACC_060 = dict(repo="google/differential-privacy (PyPI dp_accounting 0.6.0, installed copy)",
                  path="dp_accounting/rdp/rdp_privacy_accountant_test.py", commit=None)
_OPACUS = dict(repo="pytorch/opacus (PyPI opacus 1.6.0, installed copy)",
               path="opacus/tests/accountants_test.py", commit=None)
_TF_DPSGD = dict(repo="tensorflow/privacy",
                 path="tensorflow_privacy/privacy/analysis/compute_dp_sgd_privacy_test.py",
                 commit="2cd46dbb995dfee13162f4e4a7b40c1940c9c6f0")
_PLD_ACC = dict(repo="google/differential-privacy (PyPI dp_accounting 0.6.0, installed copy)",
                path="dp_accounting/pld/accountant_test.py", commit=None)
_PLD_PA = dict(repo="google/differential-privacy (PyPI dp_accounting 0.6.0, installed copy)",
               path="dp_accounting/pld/pld_privacy_accountant_test.py", commit=None)


def _sg(q, sigma, count):
    return dict(mechanism="poisson_subsampled_gaussian", sampling_probability=q,
                sigma=sigma, sensitivity=1.0, count=count)


PUBLISHED_VALUES = [
    # ---------------------------------------------------------------- Opacus
    dict(id="opacus_rdp_dpsgd", kind="epsilon_on_grid", value=7.32911117143,
         tolerance="assertAlmostEqual (7 places)",
         setting=dict(_sg(0.04, 1.5, 2250), delta=1e-5,
                      note="count = int(90 / 0.04) = 2250"),
         orders=OPACUS_ALPHAS, conversion="balle2020",
         source=dict(_OPACUS, test="AccountingTest.test_rdp_accountant "
                                   "(also test_accountant_load_state_dict)"),
         recomputed={"opacus 1.6.0": (7.3291111714386545, 3.9),
                     "dp_accounting 0.6.0, same grid": (7.329334702381698, 3.9),
                     "oracle (exact RDP by quadrature, same grid)": (7.329111171484174, 3.9)},
         note="optimal order 3.9 is fractional: dp_accounting 0.6.0's fractional-order "
              "upper bound makes it 2.2e-4 larger; exact RDP confirms Opacus."),
    dict(id="opacus_prv_dpsgd", kind="estimate_epsilon", value=6.777395712150674,
         tolerance="assertAlmostEqual (7 places)",
         setting=dict(_sg(0.04, 1.5, 2249), delta=1e-5, eps_error=0.01, delta_error=1e-8,
                      note="count = int(90 // 0.04) = 2249 (floor division, unlike the RDP test)"),
         orders=None, conversion=None,
         source=dict(_OPACUS, test="AccountingTest.test_prv_accountant"),
         recomputed={"opacus 1.6.0": 6.777395710070868,
                     "prv_accountant 0.2.0 (lower, estimate, upper)":
                         (6.75669500378357, 6.767045190922182, 6.777395712461851)},
         note="Opacus returns the PRV *upper* bound; the true epsilon lies in the bracket."),
    dict(id="opacus_gdp_dpsgd", kind="estimate_epsilon", value=(6.59, 6.6),
         tolerance="6.59 < eps < 6.6 (assertLess both sides)",
         setting=dict(_sg(0.04, 1.5, 2249), delta=1e-5),
         orders=None, conversion="CLT Gaussian-DP approximation (Bu et al. 2020)",
         source=dict(_OPACUS, test="AccountingTest.test_gdp_accountant"),
         recomputed={"opacus 1.6.0": 6.599820769085404},
         note="asymptotic approximation, NOT an upper bound (it is below the PRV lower bound)."),
    dict(id="opacus_sigma_rdp_epochs", kind="calibrated_sigma", value=1.416,
         tolerance="assertAlmostEqual (4 places)",
         setting=dict(mechanism="poisson_subsampled_gaussian", sampling_probability=0.04,
                      epochs=90, target_epsilon=8.0, delta=1e-5, epsilon_tolerance=0.01,
                      note="steps = int(90 / 0.04) = 2250"),
         orders=OPACUS_ALPHAS, conversion="balle2020",
         source=dict(_OPACUS, test="AccountingTest.test_get_noise_multiplier_rdp_epochs"),
         recomputed={"opacus 1.6.0": 1.416015625}, note="bisection result, depends on tolerance."),
    dict(id="opacus_sigma_rdp_steps", kind="calibrated_sigma", value=1.3562,
         tolerance="assertAlmostEqual (4 places)",
         setting=dict(mechanism="poisson_subsampled_gaussian", sampling_probability=0.04,
                      steps=2000, target_epsilon=8.0, delta=1e-5, epsilon_tolerance=0.01),
         orders=OPACUS_ALPHAS, conversion="balle2020",
         source=dict(_OPACUS, test="AccountingTest.test_get_noise_multiplier_rdp_steps"),
         recomputed={"opacus 1.6.0": 1.356201171875}, note="bisection result, depends on tolerance."),
    # ------------------------------------------------- RDP values at orders
    dict(id="tfp_compute_rdp_sequence", kind="rdp",
         value=(0.00065, 0.001085, 0.00218075, 0.023846, 167.416307, float("inf")),
         tolerance="assertSequenceAlmostEqual(delta=1e-5) (absolute)",
         setting=_sg(0.01, 2.5, 50), orders=(1.5, 2.5, 5, 50, 100, float("inf")), conversion=None,
         source=dict(_TF_RDP_TEST, test="TestGaussianMoments.test_compute_rdp_sequence"),
         recomputed={"oracle": (6.5007089718804e-4, 1.08541805691812e-3, 2.18075656230788e-3,
                                2.38460375387062e-2, 167.416307548418, float("inf")),
                     "opacus 1.6.0": (6.50070897e-04, 1.08541806e-03, 2.18075656e-03,
                                      2.38460375e-02, 1.67416308e+02, float("inf")),
                     "dp_accounting 0.6.0": (6.70579741e-04, 1.08548710e-03, 2.18075656e-03,
                                             2.38460375e-02, 1.67416308e+02, float("inf"))},
         note="per-step RDP times 50.  dp_accounting 0.6.0 fails this test at order 1.5 "
              "(|6.7058e-4 - 6.5e-4| = 2.1e-5 > 1e-5)."),
    dict(id="dpacc_050_steps_old", kind="rdp",
         value=(6.5007e-04, 1.0854e-03, 2.1808e-03, 2.3846e-02, 1.6742e+02, float("inf")),
         tolerance="np.allclose(rtol=1e-4)",
         setting=_sg(0.01, 2.5, 50), orders=(1.5, 2.5, 5, 50, 100, float("inf")), conversion=None,
         source=dict(_DPACC_GH, test="RdpPrivacyAccountantTest.test_compute_rdp_poisson_sampled_gaussian",
                     also="tensorflow/privacy tensorflow_privacy/privacy/analysis/"
                          "rdp_privacy_accountant_test.py @ 388f46ffa0ee0d6d4573ad304b20c26afbb94fd9"),
         recomputed={"oracle": "see tfp_compute_rdp_sequence"},
         note="these are the exact values (oracle agrees to all printed digits)."),
    dict(id="dpacc_050_steps_060", kind="rdp",
         value=(6.70579741e-04, 1.08548710e-03, 2.18075656e-03, 2.38460375e-02, 1.67416308e02,
                float("inf")),
         tolerance="np.allclose(rtol=1e-4)",
         setting=_sg(0.01, 2.5, 50), orders=(1.5, 2.5, 5, 50, 100, float("inf")), conversion=None,
         source=dict(_DPACC_060, test="RdpPrivacyAccountantTest.test_compute_rdp_poisson_sampled_gaussian"),
         recomputed={"dp_accounting 0.6.0": "identical"},
         note="UPPER BOUNDS at the fractional orders 1.5 and 2.5 (exact: 6.50071e-4, "
              "1.08542e-3); exact at the integer orders.  Do not use 1.5/2.5 as exact targets."),
    dict(id="tfp_compute_rdp_scalar", kind="rdp", value=0.07737,
         tolerance="assertAlmostEqual (5 places)",
         setting=_sg(0.1, 2.0, 10), orders=(5,), conversion=None,
         source=dict(_TF_RDP_TEST, test="TestGaussianMoments.test_compute_rdp_scalar"),
         recomputed={"oracle (tight_bound * 10)": 0.0773696848979586515865985,
                     "opacus 1.6.0": 0.07736968489795912}, note=""),
    # --------------------------------------------- RDP -> epsilon conversions
    dict(id="pure_dp_conversion", kind="epsilon_on_grid", value=1.32783806176,
         tolerance="assertAlmostEqual (7 places); optimal order 32",
         setting=dict(mechanism="constant RDP 1.1 at every order (pure-DP-like)", delta=1e-5),
         orders=tuple(range(2, 33)), conversion="balle2020",
         source=dict(_DPACC_060, test="test_compute_epsilon_delta_pure_dp",
                     also="tensorflow/privacy rdp_accountant_test.py "
                          "test_get_privacy_spent_check_target_delta (same number)"),
         recomputed={"dp_accounting 0.6.0": (1.327838061755436, 32),
                     "opacus 1.6.0": (1.327838061755436, 32),
                     "closed form": "1.1 + log(31/32) - (log(1e-5) + log(32)) / 31"},
         note="inverse check in the same tests: delta(epsilon=1.32783806176) = 1e-5."),
    dict(id="gaussian_rdp_conversion", kind="epsilon_on_grid", value=1.0,
         tolerance="assertAlmostEqual (7 places)",
         setting=dict(mechanism="gaussian", sigma=4.530877117, sensitivity=1.0, count=1,
                      delta=1e-6),
         orders=FINE_GRID_0001, conversion="balle2020",
         source=dict(_DPACC_060, test="test_compute_epsilon_delta_gaussian",
                     also="tensorflow/privacy rdp_accountant_test.py "
                          "test_get_privacy_spent_check_target_delta"),
         recomputed={"dp_accounting 0.6.0": (1.0000000002681213, 21.985),
                     "delta at epsilon = 1": 1.0000000056265237e-06,
                     "oracle exact epsilon (analytic Gaussian)": 0.927392337997443},
         note="'exactly (1, 1e-6)' refers to the RDP conversion; the tight epsilon is 0.9274."),
    # ------------------------------------ TF Privacy DP-SGD (order grid above)
    dict(id="tfp_dpsgd_test0", kind="epsilon_on_grid", value=0.7242234026109595,
         tolerance="assertAlmostEqual (7 places); optimal order 19.0",
         setting=dict(_sg(150 / 60000, 1.3, 6000), delta=1e-5,
                      note="n=60000, batch=150, epochs=15, count=ceil(15*60000/150)"),
         orders=TF_PRIVACY_DPSGD_ORDERS, conversion="balle2020",
         source=dict(_TF_DPSGD, test="test_compute_dp_sgd_privacy Test0"),
         recomputed={"dp_accounting 0.6.0": (0.7242234026106222, 19.0),
                     "opacus 1.6.0": (0.7242234026109339, 19.0)}, note=""),
    dict(id="tfp_dpsgd_test1", kind="epsilon_on_grid", value=1.4154988495444842,
         tolerance="assertAlmostEqual (7 places); optimal order 13.0",
         setting=dict(_sg(100 / 100000, 1.0, 30000), delta=1e-7,
                      note="n=100000, batch=100, epochs=30"),
         orders=TF_PRIVACY_DPSGD_ORDERS, conversion="balle2020",
         source=dict(_TF_DPSGD, test="test_compute_dp_sgd_privacy Test1"),
         recomputed={"dp_accounting 0.6.0": (1.4154988495445144, 13.0),
                     "opacus 1.6.0": (1.4154988495444845, 13.0)}, note=""),
    dict(id="tfp_dpsgd_test2", kind="epsilon_on_grid", value=5907982.3113978775,
         tolerance="assertAlmostEqual (7 places); optimal order 1.25",
         setting=dict(_sg(1024 / 100000000, 0.1, 976563), delta=1e-7,
                      note="n=1e8, batch=1024, epochs=10, count=ceil(10*1e8/1024)"),
         orders=TF_PRIVACY_DPSGD_ORDERS, conversion="balle2020",
         source=dict(_TF_DPSGD, test="test_compute_dp_sgd_privacy Test2"),
         recomputed={"dp_accounting 0.6.0": (5907982.3113978775, 1.25),
                     "opacus 1.6.0": (5907982.311381949, 1.25),
                     "oracle (exact RDP at 1.25)": 5907982.311382007},
         note="fractional optimal order: the published value carries dp_accounting's "
              "fractional-order upper bound; exact differs by 1.6e-5 (> the 5e-8 asserted)."),
    # ------------------------------------------------- exact Gaussian profile
    dict(id="pld_smallest_gaussian_noise", kind="exact_delta", value=0.78760074,
         tolerance="assertAlmostEqual (7 places) on the returned std 1/3",
         setting=dict(mechanism="gaussian", sigma=1 / 3, sensitivity=1.0, count=1, epsilon=1.0,
                      also="sensitivity 6, 25 queries, sigma 10 (same mu = 3)"),
         orders=None, conversion=None,
         source=dict(_PLD_ACC, test="test_get_smallest_gaussian_noise (base, "
                                    "varying_sensitivity_and_num_queries)"),
         recomputed={"oracle gaussian_delta(1, mu=3)": 0.78760074136038453359},
         note="Balle & Wang 2018 Thm 8 with mu = 3."),
    dict(id="pld_gaussian_basic", kind="exact_delta", value=0.126936,
         tolerance="assertAlmostEqual(delta=1e-3) (value truncated)",
         setting=dict(mechanism="gaussian", sigma=3 ** 0.5, sensitivity=1.0, count=3, epsilon=1.0),
         orders=None, conversion=None,
         source=dict(_PLD_PA, test="PLDAccountantTest.test_gaussian_basic"),
         recomputed={"oracle gaussian_delta(1, mu=1)": 0.12693673750664394580},
         note="mu = sqrt(3)/sqrt(3) = 1."),
    # ----------------------------------------------------- pure DP (Laplace)
    dict(id="pld_subsampled_laplace", kind="exact_epsilon", value=2.46964,
         tolerance="assertAlmostEqual(delta=1e-3) at delta = 1e-14",
         setting=dict(mechanism="poisson_subsampled_laplace", sampling_probability=0.2,
                      scale=0.5, sensitivity=1.0, count=3),
         orders=None, conversion=None,
         source=dict(_PLD_PA, test="PLDAccountantTest.test_poisson_subsampled_laplace"),
         recomputed={"closed form 3*log(1 + 0.2*(e^2 - 1))": 2.4696449716730733488},
         note="pure-DP amplification by subsampling; delta 1e-14 is truncation slack."),
    dict(id="pld_laplace_basic", kind="exact_epsilon", value=4.0,
         tolerance="assertAlmostEqual(delta=1e-6) at delta = 1e-14",
         setting=dict(mechanism="laplace composition", scales=(1.0, 2.0), counts=(3, 2),
                      sensitivity=1.0),
         orders=None, conversion=None,
         source=dict(_PLD_PA, test="PLDAccountantTest.test_laplace_basic"),
         recomputed={"closed form 3/1 + 2/2": 4.0}, note="basic composition of pure DP is tight here."),
    dict(id="pld_subsampled_gaussian", kind="estimate_delta", value=0.15594,
         tolerance="assertAlmostEqual(delta=1e-3)",
         setting=dict(_sg(0.2, 0.5, 3), epsilon=1.0),
         orders=None, conversion=None,
         source=dict(_PLD_PA, test="PLDAccountantTest.test_poisson_subsampled_gaussian "
                                   "(and test_self_composed_subsampled_gaussian)"),
         recomputed={}, note="PLD (pessimistic) estimate; no closed form."),
]
"""Published values (list of dicts; see the module docstring for the fields)."""


SETTINGS_WITHOUT_PUBLISHED_NUMBER = [
    dict(id="prv_gaussian_homogeneous", kind="exact_delta",
         setting=dict(mechanism="gaussian", sigma=100.0, sensitivity=1.0, count=10000, epsilon=4.0),
         source=dict(repo="microsoft/prv_accountant", path="tests/test_accountant.py",
                     commit="1d9048b75d028291168adaec6bc9f89b42c40151",
                     test="test_gaussian_mechanism_analytic_homogeneous (also 10001, 10002 steps)"),
         published="asserts delta_lower <= exact <= delta_upper only (no number)",
         oracle_value=4.7122412007931198674e-05),
    dict(id="prv_gaussian_heterogeneous", kind="exact_delta",
         setting=dict(mechanism="gaussian composition", sigmas=(10.0, 5.0), counts=(50, 50),
                      sensitivity=1.0, epsilon=4.0),
         source=dict(repo="microsoft/prv_accountant", path="tests/test_accountant.py",
                     commit="1d9048b75d028291168adaec6bc9f89b42c40151",
                     test="test_gaussian_mechanism_analytic_heterogeneous"),
         published="asserts delta_lower <= exact <= delta_upper only (no number)",
         oracle_value=0.016455672864108926702),
    dict(id="dpacc_log_a_equals_mp", kind="rdp",
         setting=dict(mechanism="poisson_subsampled_gaussian, one step; quantity log(A_alpha) = "
                                "(alpha - 1) * RDP", fields="(q, sigma, order, oracle log A)"),
         source=dict(_DPACC_060, test="test_compute_log_a_equals_mp (same params in TF Privacy)"),
         published="compares _compute_log_a with a 15-digit mpmath integral, rtol=1e-4 "
                   "(0.6.0 adds atol=1e-8, which hides the 3.9e-4 relative excess of its "
                   "fractional-order bound at (1e-4, 1.0, 1.5): 6.44520e-9 vs exact 6.44269e-9)",
         oracle_value=((1e-7, 0.1, 1.01, 4.0034123225263986e-08), (1e-6, 0.1, 256, 3260463.2292971608),
                       (1e-5, 0.1, 256.1, 3263607.0397884213), (1e-6, 1.0, 27, 8.7695113048484979e-10),
                       (1e-4, 1.0, 1.5, 6.4426869538366497e-09), (1e-3, 1.0, 2, 1.7182803522145154e-06),
                       (0.01, 10.0, 20, 0.00019129699912842963), (0.1, 100.0, 20.5, 0.00019991818458068296),
                       (0.99, 0.1, 256, 3263997.4271140211), (0.999, 100.0, 256.1, 3.2601080379731127))),
    dict(id="brief_gaussian_240", kind="exact_epsilon",
         setting=dict(mechanism="gaussian", sigma=30.0, sensitivity=1.0, count=240, delta=1e-10),
         source=dict(repo=None, path=None, commit=None,
                     test="quoted in the task brief as a published check; source not located"),
         published="about 3.207781", oracle_value=3.2077805449532346149),
]
"""Settings used by other libraries' tests without a hard-coded number, with oracle values."""
