"""Sample episode generators, one per dataset kind, faithful to its format document.

Each kind names its generator in its DatasetKind (react_ros.adapters); this
package only holds them.
"""
