#!/bin/bash
# The Littlest JupyterHub (one server for the whole class) set up for the hookviz course.
# Run as root on a server where TLJH is installed (https://tljh.jupyter.org), with the workshop tag:
#   sudo bash tljh.sh workshop-2026-05 'a workshop password'
# Sizes: see README.md (994 MiB per learner with two notebooks open; 30 learners: 48 GB RAM, 8 cores).
set -euo pipefail
TAG=${1:?usage: sudo bash tljh.sh TAG PASSWORD}
PASSWORD=${2:?usage: sudo bash tljh.sh TAG PASSWORD (8 characters or more)}
COURSE=/srv/hookviz                  # outside every home folder
USER_PY=/opt/tljh/user/bin/python    # TLJH's environment for all learners (needs Python 3.11 or newer)

# 1. The course at the workshop tag (the teacher notebooks stay here, out of the learners' homes).
git clone --depth 1 --branch "${TAG}" https://github.com/hookviz/hookviz "${COURSE}"

# 2. The pinned environment: the CPU build of torch 2.13.0 first (plain pip would pick a multi-GB CUDA
#    build), then hookviz and its other pins (numpy, matplotlib, ipywidgets), then nbgitpuller.
"${USER_PY}" -m pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0
"${USER_PY}" -m pip install -e "${COURSE}" nbgitpuller==1.3.0
"${USER_PY}" -c "import torch, hookviz; assert not torch.version.cuda, torch.__version__; print('course env ok:', torch.__version__)"

# 2b. A font that draws Chinese (the Chinese edition; binder/apt.txt installs the same one in the Binder and hub
#     images), so that a browser on this server and hookviz.check_setup() find one.
apt-get install -y --no-install-recommends fonts-wqy-microhei

# 3. One torch thread per kernel (as binder/start does) and every learner allowed to log in with the
#    password, through TLJH's jupyterhub_config.d.
install -D -m 644 "$(dirname "$0")/tljh_hookviz_config.py" /opt/tljh/config/jupyterhub_config.d/hookviz.py

# 4. The course's JupyterLab defaults, as on Binder and with `make lab` (binder/postBuild says why): widget
#    state saved with the notebook, no news pop-up, and closing a notebook's tab shuts its kernel down.
install -D -m 644 "${COURSE}/binder/overrides.json" /opt/tljh/user/share/jupyter/lab/settings/overrides.json

# 4b. hookviz's JupyterLab helper (links to a section of another notebook open at that section; the widgets draw
#     Chinese with hookviz's font), as binder/postBuild and `make lab` link it.
mkdir -p /opt/tljh/user/share/jupyter/labextensions
ln -sfn "${COURSE}/hookviz/labextension" /opt/tljh/user/share/jupyter/labextensions/hookviz-lab

# 5. Login with one workshop password, per-learner limits, JupyterLab, and an idle culler that outlasts
#    the breaks (TLJH's default timeout was 600 s in older releases: a 10-minute break would end sessions).
tljh-config set auth.type shared-password
tljh-config set auth.SharedPasswordAuthenticator.user_password "${PASSWORD}"
tljh-config set limits.memory 2G
tljh-config set limits.cpu 2
tljh-config set user_environment.default_app jupyterlab
tljh-config set services.cull.timeout 3600
tljh-config set services.cull.every 300
tljh-config reload
echo "Links for the learners: python ${COURSE}/workshop/jupyterhub/nbgitpuller_link.py https://<this hub> ${TAG}-student"
