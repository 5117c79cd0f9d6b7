#!/usr/bin/env python3
"""Reference values for crates/core/src/stats/evt/profile.rs: profile-likelihood intervals of the level
exceeded at rate t (GPD peaks + binomial rate), by Nelder-Mead and brentq (SciPy)."""
import numpy as np
from scipy import optimize
from scipy.stats import genpareto, chi2
def data(n, xi=0.1):
    i=np.arange(1,n+1); u=(i*0.6180339887498949)%1.0
    return genpareto.isf(u, xi, scale=1.0)
z=data(400); C=400.0; n=40000.0
def ll_gpd(s, xi):
    sig=np.exp(s); w=1+xi*z/sig
    if np.any(w<=0): return -np.inf
    if abs(xi)<1e-12: return -len(z)*s - np.sum(z/sig)
    return -len(z)*s - (1+1/xi)*np.sum(np.log(w))
def q(xi,a):
    if abs(xi)<1e-12: return a
    w=1+xi*a
    if w<=0: return np.inf
    return np.log(w)/xi
def joint(p, y, lnt):
    s,xi=p; sig=np.exp(s)
    lnl = lnt + q(xi, y/sig)
    if not lnl<0: return -np.inf
    lam=np.exp(lnl)
    return ll_gpd(s,xi) + C*np.log(lam) + (n-C)*np.log1p(-lam)
# MLE
t_fit = optimize.minimize(lambda p: -ll_gpd(*p), [0.0,0.1], method='Nelder-Mead', options=dict(xatol=1e-12,fatol=1e-13,maxiter=20000))
s_hat, xi_hat = t_fit.x
llmax = -t_fit.fun + C*np.log(C/n) + (n-C)*np.log1p(-C/n)
crit = chi2.ppf(0.95,1)
def prof(y, lnt, start):
    # Nelder-Mead from several feasible starts (a start where the joint is -inf stalls it).
    best = (-np.inf, None)
    for xi0 in np.linspace(-0.3, 0.6, 10):
        s0 = start[0]
        while not np.isfinite(joint([s0, xi0], y, lnt)) and s0 < start[0] + 40:
            s0 += 0.25
        if not np.isfinite(joint([s0, xi0], y, lnt)):
            continue
        r=optimize.minimize(lambda p: -joint(p,y,lnt), [s0, xi0], method='Nelder-Mead', options=dict(xatol=1e-12,fatol=1e-13,maxiter=40000))
        r2=optimize.minimize(lambda p: -joint(p,y,lnt), r.x, method='Nelder-Mead', options=dict(xatol=1e-12,fatol=1e-13,maxiter=40000))
        if -r2.fun > best[0]:
            best = (-r2.fun, r2.x)
    return best
for t in [1e-3,1e-5,1e-7]:
    lnt=np.log(t); sig=np.exp(s_hat)
    r=t/(C/n)
    yhat = sig*((r**-xi_hat)-1)/xi_hat
    D=lambda y: 2*(llmax - prof(y, lnt, [s_hat, xi_hat])[0]) - crit
    hi=optimize.brentq(D, yhat*1.0001, yhat*20, xtol=1e-12, rtol=1e-12)
    lo=optimize.brentq(D, yhat*0.2, yhat*0.9999, xtol=1e-12, rtol=1e-12)
    print(f"t={t:g} yhat={yhat!r} lo={lo!r} hi={hi!r}")
print("sigma", np.exp(s_hat), "xi", xi_hat)
