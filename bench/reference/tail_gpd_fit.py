#!/usr/bin/env python3
"""Reference values for crates/core/src/stats/evt/gpd.rs: genpareto.fit(z, floc=0) on fixed data, with
SciPy's default optimizer and with fmin driven to convergence (xtol=ftol=1e-13)."""
import numpy as np
from scipy.stats import genpareto
from scipy import optimize
def data(n, xi, scale):
    i=np.arange(1,n+1)
    u=(i*0.6180339887498949)%1.0
    # inverse survival: z = scale*((u)^-xi - 1)/xi
    return genpareto.isf(u, xi, scale=scale)
def tight(func, x0, args=(), disp=0):
    return optimize.fmin(func, x0, args=args, xtol=1e-13, ftol=1e-13, maxiter=100000, maxfun=100000, disp=0)
for (n,xi,sc) in [(200,0.2,2.0),(200,-0.2,1.5),(300,0.0,3.0),(150,0.45,0.7),(500,-0.4,10.0)]:
    z=data(n,xi,sc)
    d=genpareto.fit(z,floc=0)
    t=genpareto.fit(z,floc=0,optimizer=tight)
    ll=np.sum(genpareto.logpdf(z,t[0],loc=0,scale=t[2]))
    print(n,xi,sc,"default c=%.12g scale=%.12g | tight c=%.15g scale=%.15g ll=%.15g"%(d[0],d[2],t[0],t[2],ll), "rel", abs(d[0]-t[0])/abs(t[0]), abs(d[2]-t[2])/t[2])
