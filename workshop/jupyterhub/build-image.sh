#!/bin/bash
# The single-user image for a JupyterHub on Kubernetes (config.yaml), built from the course's binder/
# folder by repo2docker. The course goes to /srv/hookviz, OUTSIDE the home folder: z2jh mounts each
# learner's persistent volume on /home/jovyan, which would hide a course copied there (repo2docker's
# default). nbgitpuller is added for the links and the postStart pull (repo2docker's base environment
# has jupyterhub-singleuser but no nbgitpuller).
#   usage: bash build-image.sh TAG IMAGE      e.g. bash build-image.sh workshop-2026-05 registry.example.org/hookviz-course
set -euo pipefail
TAG=${1:?usage: build-image.sh TAG IMAGE (the workshop tag, and the image name without a tag)}
IMAGE=${2:?usage: build-image.sh TAG IMAGE}
TARGET_REPO_DIR=/srv/hookviz
APPENDIX="RUN python -m pip install --no-cache-dir nbgitpuller==1.3.0"

repo2docker --no-run --user-id 1000 --user-name jovyan \
  --target-repo-dir "${TARGET_REPO_DIR}" \
  --appendix "${APPENDIX}" \
  --ref "${TAG}" \
  --image-name "${IMAGE}:${TAG}" \
  https://github.com/hookviz/hookviz
docker push "${IMAGE}:${TAG}"
