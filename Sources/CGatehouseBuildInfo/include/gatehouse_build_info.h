#ifndef GATEHOUSE_BUILD_INFO_H
#define GATEHOUSE_BUILD_INFO_H

/// The commit this binary was built from (Package.swift: GATEHOUSE_REVISION, the checkout's commit, or "unknown").
const char *gatehouse_build_revision(void);

#endif
